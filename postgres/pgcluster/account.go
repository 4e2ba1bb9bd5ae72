package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// account is the user initdb and the server run as.
type account struct {
	name   string
	uid    uint32
	gid    uint32
	groups []uint32
	// cred is nil when the server runs as this process's own user.
	cred *syscall.Credential
}

// serverAccount returns the user to run the PostgreSQL binaries as: this
// process's user, or "postgres" when running as root (initdb and postgres
// refuse to run as root).
func serverAccount() (account, error) {
	if os.Geteuid() != 0 {
		a := account{name: strconv.Itoa(os.Geteuid()), uid: uint32(os.Geteuid()), gid: uint32(os.Getegid())}
		if u, err := user.Current(); err == nil {
			a.name = u.Username
		}
		return a, nil
	}
	u, err := user.Lookup(superuser)
	if err != nil {
		return account{}, fmt.Errorf("%w: %v", ErrNoUser, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return account{}, fmt.Errorf("%w: %v", ErrNoUser, err)
	}
	if uid == 0 {
		return account{}, fmt.Errorf("%w: it has uid 0", ErrNoUser)
	}
	a := account{name: u.Username, uid: uint32(uid), gid: uint32(gid)}
	if ids, err := u.GroupIds(); err == nil {
		for _, s := range ids {
			if g, err := strconv.ParseUint(s, 10, 32); err == nil && uint32(g) != a.gid {
				a.groups = append(a.groups, uint32(g))
			}
		}
	}
	a.cred = &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: a.groups}
	return a, nil
}

// checkTraversable returns ErrNotTraversable naming the first directory on
// the way to dir (dir included) that a cannot search. It reads permission
// bits only; ACLs are not consulted.
func checkTraversable(dir string, a account) error {
	var chain []string
	for d := dir; ; d = filepath.Dir(d) {
		chain = append(chain, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	slices.Reverse(chain)
	for _, d := range chain {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("pgcluster: %w", err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		perm := fi.Mode().Perm()
		var bit os.FileMode
		switch {
		case st.Uid == a.uid:
			bit = 0o100
		case st.Gid == a.gid || slices.Contains(a.groups, st.Gid):
			bit = 0o010
		default:
			bit = 0o001
		}
		if perm&bit == 0 {
			return fmt.Errorf("%w: user %s (uid %d) cannot enter %s (mode %v, owner uid %d, gid %d); choose a Dir outside it or make it searchable (chmod o+x)",
				ErrNotTraversable, a.name, a.uid, d, perm, st.Uid, st.Gid)
		}
	}
	return nil
}

// lockDir takes an exclusive flock on path, polling so ctx can cancel the
// wait. The returned func releases it. The lock dies with the process, so a
// crashed Start never blocks later ones; Go opens files close-on-exec, so the
// server we start does not inherit it.
func lockDir(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("pgcluster: lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("pgcluster: waiting for %s: %w", path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
