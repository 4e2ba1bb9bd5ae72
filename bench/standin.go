package bench

import (
	"os"
	"runtime/debug"
)

// standInHeap is the heap at which a load process (the callers, the
// scripted model) collects: they keep little live (a few MB to a few
// hundred) and allocate fast, so at the box's GOGC the model's process
// collected every two seconds, each time a processor at the box's
// real-time priority marking for milliseconds beside the box's pacers.
const standInHeap = 2 << 30

// standInGC makes a load process collect only as its heap reaches
// standInHeap, unless the environment's GOGC or GOMEMLIMIT says otherwise.
func standInGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(standInHeap)
	debug.SetGCPercent(-1)
}
