//go:build stagetime

package stages

import (
	"fmt"
	"os"
	"sync"
	"time"
)

var (
	mu    sync.Mutex
	last  time.Time
	sums  [count]time.Duration
	marks [count]int
)

// Mark closes the interval since the previous Mark at stage s.
func Mark(s Stage) {
	now := time.Now()
	mu.Lock()
	defer mu.Unlock()
	if !last.IsZero() {
		sums[s] += now.Sub(last)
		marks[s]++
	}
	last = now
	if s == Header && marks[Header] == 1000 {
		for i := range count {
			if marks[i] > 0 {
				fmt.Fprintf(os.Stderr, "stage %2d %-13s n=%5d avg %8.1f us\n", i, names[i], marks[i],
					float64(sums[i].Nanoseconds())/1e3/float64(marks[i]))
			}
		}
		fmt.Fprintln(os.Stderr, "--")
		sums, marks = [count]time.Duration{}, [count]int{}
	}
}
