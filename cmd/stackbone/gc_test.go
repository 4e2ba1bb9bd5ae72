package main

import (
	"errors"
	"io/fs"
	"testing"
)

// The box's heap limit is a share of the machine's memory, or of its
// container's limit when that is lower; an unlimited cgroup v1 (a huge
// number) and unreadable files leave the machine's figure.
func TestMemoryAvailable(t *testing.T) {
	meminfo := "MemTotal:       24575012 kB\nMemFree:         1000000 kB\n"
	for _, c := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"machine", map[string]string{"/proc/meminfo": meminfo}, 24575012 << 10},
		{"cgroup v2 limit", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "2147483648\n"}, 2 << 30},
		{"cgroup v2 unlimited", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "max\n"}, 24575012 << 10},
		{"cgroup v1 unlimited", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 24575012 << 10},
		{"cgroup only", map[string]string{"/sys/fs/cgroup/memory.max": "1073741824"}, 1 << 30},
		{"nothing", map[string]string{}, 0},
	} {
		read := func(p string) ([]byte, error) {
			if s, ok := c.files[p]; ok {
				return []byte(s), nil
			}
			return nil, errors.New(p + ": " + fs.ErrNotExist.Error())
		}
		if got := memoryAvailable(read); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
