package cluster

import "errors"

// ErrUp reports that `deploy/cluster.sh up` did not bring the cluster up.
var ErrUp = errors.New("deploy/cluster.sh up failed")

// ErrOtherBinary reports a script that cannot run the binary asked for:
// one from before PICTOR_BIN, which runs its checkout's bin/pictor.
var ErrOtherBinary = errors.New("the cluster would run another pictor binary")
