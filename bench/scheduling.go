package bench

import (
	"fmt"

	"github.com/stackbone/box/config"
	"github.com/stackbone/box/internal/realtime"
)

// schedulingNote says, for a report's setup, how the run's box schedules
// its threads while calls are in progress, and whether the system let it.
func schedulingNote(m config.Media) string {
	if !m.Realtime() {
		return "scheduling: normal (media.scheduling normal: the box's threads on the ordinary scheduler)"
	}
	release, err := realtime.Hold()
	if err != nil {
		return fmt.Sprintf("scheduling: normal, real-time refused by the system (%v)", err)
	}
	release()
	return "scheduling: real-time (media.scheduling realtime, as the shipped configurations: the box's threads at real-time round-robin while calls are in progress)"
}
