package render

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// account is the system user Chromium runs as.
type account struct {
	name     string
	uid, gid uint32
	// other is set when the account is not this process's user: Chromium
	// is then started with its credentials, and its profiles must be
	// reachable by it.
	other bool
}

// DefaultUser is the account Chromium runs as when Pictor runs as root and
// Config.User is empty; `make run` and `make test` create it. Without it,
// Chromium runs as FallbackUser.
const (
	DefaultUser  = "pictor"
	FallbackUser = "nobody"
)

// resolveAccount finds who Chromium runs as. As root it must be another
// user, since Chromium's sandbox refuses root; noSandbox allows root.
func resolveAccount(name string, noSandbox bool) (account, error) {
	euid := os.Geteuid()
	if name == "" {
		if euid != 0 {
			return account{name: "", uid: uint32(euid), gid: uint32(os.Getegid())}, nil
		}
		if noSandbox {
			return account{name: "root"}, nil
		}
		name = DefaultUser
		if _, err := user.Lookup(name); err != nil {
			name = FallbackUser
		}
	}
	u, err := user.Lookup(name)
	if err != nil {
		return account{}, fmt.Errorf("--chromium-user %q: %w", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return account{}, fmt.Errorf("--chromium-user %q: %w", name, err)
	}
	a := account{name: name, uid: uint32(uid), gid: uint32(gid), other: int(uid) != euid}
	if a.other && euid != 0 {
		return account{}, fmt.Errorf("--chromium-user %q: only root can start Chromium as another user", name)
	}
	if uid == 0 && !noSandbox {
		return account{}, errors.New("--chromium-user root: Chromium's sandbox refuses root; name another user or set --chromium-no-sandbox")
	}
	return a, nil
}

// ProfileRoot is where an engine configured with ProfileDir dir keeps its
// browsers' profiles when Chromium runs as another user: dir itself when
// every directory above it lets others search it, else a directory of its
// own under os.TempDir() named after dir (a data directory under /root, or
// a test's private temporary directory, is closed to Chromium's user).
func ProfileRoot(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = filepath.Clean(dir)
	}
	if searchable(filepath.Dir(abs)) {
		return abs
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(os.TempDir(), "pictor-chromium-"+hex.EncodeToString(sum[:8]))
}

// searchable reports whether any user may pass through dir and every
// directory above it.
func searchable(dir string) bool {
	for {
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir = parent
	}
}

// prepareProfileRoot creates the directory that holds the profiles, or
// checks the one that exists: ours, a real directory, writable only by us.
// When Chromium runs as another user it may pass through the directory but
// not list it.
func prepareProfileRoot(dir string, a account) error {
	mode := os.FileMode(0o700)
	if a.other {
		mode = 0o711
	}
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%w: profile directory: %v", ErrBrowser, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("%w: profile directory: %v", ErrBrowser, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: profile directory %s is not a directory of this user closed to others", ErrBrowser, dir)
	}
	if fi.Mode().Perm() != mode {
		if err := os.Chmod(dir, mode); err != nil {
			return fmt.Errorf("%w: profile directory: %v", ErrBrowser, err)
		}
	}
	return nil
}

// prepareProfile hands a new profile directory to Chromium's user.
func prepareProfile(profile string, a account) error {
	if !a.other {
		return nil
	}
	return os.Chown(profile, int(a.uid), int(a.gid))
}

// browserCmd sets how Chromium's process starts: as the account, with no
// supplementary groups, killed when Pictor dies, in a process group of its
// own, and with an environment of its own — never Pictor's, which holds
// secrets such as the master key — whose home is the profile, so that
// nothing of Chromium's (crash report settings, caches) lands in the home
// of Pictor's user.
func browserCmd(a account, profile string) func(*exec.Cmd) {
	return func(cmd *exec.Cmd) {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		// Go sets the parent death signal after the credentials, so the
		// change of user does not clear it.
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
		// The group (led by the main process, its id the main pid) holds
		// every process the browser forks, so closing it kills them all at
		// once (endProcesses). A terminal's ^C goes to Pictor alone, which
		// closes the browser itself.
		cmd.SysProcAttr.Setpgid = true
		if a.other {
			cmd.SysProcAttr.Credential = &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: []uint32{}}
		}
		cmd.Dir = profile
		cmd.Env = browserEnv(profile)
	}
}

// browserEnv is Chromium's whole environment.
func browserEnv(profile string) []string {
	env := []string{
		"HOME=" + profile,
		"XDG_CONFIG_HOME=" + filepath.Join(profile, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(profile, ".cache"),
		"PATH=/usr/local/bin:/usr/bin:/bin",
	}
	for _, k := range []string{"TMPDIR", "LANG", "LC_ALL", "TZ", "FONTCONFIG_FILE", "FONTCONFIG_PATH"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}
