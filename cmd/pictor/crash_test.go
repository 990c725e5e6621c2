package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pictorhq/pictor/origin/chromiumtest"
	"github.com/pictorhq/pictor/origin/render"
)

// waitProcesses polls, for at most limit, until the processes on dir
// satisfy ok, and returns them.
func waitProcesses(t *testing.T, dir string, limit time.Duration, what string, ok func([]int) bool) []int {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		pids := render.Processes(dir)
		if ok(pids) {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; processes on %s: %v", what, limit, dir, pids)
		}
		<-tick.C
	}
}

// pidfds opens a pidfd on each of pids, closed when the test ends; a
// process already gone is left out.
func pidfds(t *testing.T, pids []int) map[int]int {
	t.Helper()
	fds := map[int]int{}
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if errors.Is(err, unix.ESRCH) {
			continue
		}
		if err != nil {
			t.Fatalf("pidfd of %d: %v", pid, err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		fds[pid] = fd
	}
	return fds
}

// waitExit waits until the process of the pidfd fd exits, or deadline; a
// signal to the test binary interrupting the wait does not end it.
func waitExit(fd int, deadline time.Time) error {
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(max(time.Until(deadline), 0).Milliseconds()))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return err
		case n == 0:
			return errors.New("still running")
		}
		return nil
	}
}

func none(pids []int) bool { return len(pids) == 0 }
func some(pids []int) bool { return len(pids) > 0 }

// TestCrashLeavesNoChromium kills the pictor process and checks that its
// Chromium dies with it, and that the next start on the data directory kills
// a browser a crash left behind.
func TestCrashLeavesNoChromium(t *testing.T) {
	dir := t.TempDir()
	// Chromium runs as its own user (the suite runs as root), which cannot
	// enter the test's private directory: its profiles are then where
	// render.ProfileRoot says.
	profiles := render.ProfileRoot(filepath.Join(dir, "chromium"))
	serve := []string{"serve", "--data-dir", dir, "--addr", "127.0.0.1:0", "--origin-addr", "127.0.0.1:0", "--allow-private-urls"}

	first, _ := startProcess(t, serve...)
	crashed := render.Processes(profiles)
	if len(crashed) < 2 {
		t.Fatalf("Chromium processes on %s after start: %v, want the browser and its children", profiles, crashed)
	}
	// Each found process, held by a pidfd: once the browser's main process
	// is gone, the headless shell's children no longer show on the profile.
	held := pidfds(t, crashed)
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.cmd.Wait()
	killed := time.Now()
	waitProcesses(t, profiles, 15*time.Second, "Chromium exits with the killed pictor", none)
	for pid, fd := range held {
		if err := waitExit(fd, killed.Add(15*time.Second)); err != nil {
			t.Fatalf("Chromium process %d outlived the killed pictor by 15 s (%v)", pid, err)
		}
	}
	t.Logf("%d Chromium processes gone %v after pictor was killed", len(crashed), time.Since(killed))

	// A browser left behind by a crash (started here, so no parent death
	// signal ends it) under the data directory's profiles.
	stale := exec.Command(chromiumtest.Path(), "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
		"--user-data-dir="+filepath.Join(profiles, "browser-stale"), "about:blank")
	if err := stale.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var staleErr error
	go func() { staleErr = stale.Wait(); close(exited) }()
	t.Cleanup(func() {
		stale.Process.Kill()
		<-exited
	})
	leftovers := waitProcesses(t, profiles, 15*time.Second, "the stale browser starts", some)

	second, _ := startProcess(t, serve...)
	select {
	case <-exited:
		if ee, ok := staleErr.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("stale browser ended with %v, want SIGKILL", staleErr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the new pictor did not kill the stale browser")
	}
	running := render.Processes(profiles)
	if len(running) == 0 {
		t.Fatal("the new pictor runs no Chromium")
	}
	for _, pid := range running {
		if slices.Contains(crashed, pid) || slices.Contains(leftovers, pid) {
			t.Fatalf("pid %d of an earlier browser still runs", pid)
		}
	}

	if err := second.terminate(t); err != nil {
		t.Fatalf("pictor exit after SIGTERM: %v\n%s", err, second.stderr.String())
	}
	if left := render.Processes(profiles); len(left) > 0 {
		t.Fatalf("Chromium processes left after a clean shutdown: %v", left)
	}
}
