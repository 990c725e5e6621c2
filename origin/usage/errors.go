package usage

import "errors"

// ErrPlanLimit is returned when a charge would exceed the allowance.
var ErrPlanLimit = errors.New("plan limit exceeded")
