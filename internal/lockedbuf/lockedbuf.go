// Package lockedbuf is a bytes.Buffer safe for one writer and concurrent
// readers: a process's output or a logger's lines collected while a test
// reads them.
package lockedbuf

import (
	"bytes"
	"sync"
)

// Buffer collects writes; String and Len read what is there so far.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Len is the number of bytes written so far.
func (s *Buffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}
