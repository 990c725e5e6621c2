package baseline

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/pictorhq/pictor/bench/card"
	"github.com/pictorhq/pictor/bench/load"
)

// Vipsthumbnail runs one `vipsthumbnail in -s Wx -o out[options]` (the
// binary bin; options are the WebP saver's, such as "[Q=90]") and returns
// the time from starting the process to its exit, and its CPU time. The
// output is checked to be a WebP of width w, then removed.
func Vipsthumbnail(ctx context.Context, bin, in, out, options string, w int) (latency, cpu time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, load.RequestTimeout)
	defer cancel()
	defer os.Remove(out)
	cmd := exec.CommandContext(ctx, bin, in, "-s", strconv.Itoa(w)+"x", "-o", out+options)
	var stderr tailBuffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	start := time.Now()
	err = cmd.Run()
	latency = time.Since(start)
	if ps := cmd.ProcessState; ps != nil {
		cpu = ps.UserTime() + ps.SystemTime()
	}
	if err != nil {
		return 0, cpu, fmt.Errorf("vipsthumbnail: %w: %s", err, stderr.lastLine())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return 0, cpu, fmt.Errorf("vipsthumbnail: %w", err)
	}
	if err := card.CheckWebPWidth(b, w); err != nil {
		return 0, cpu, fmt.Errorf("vipsthumbnail: %w", err)
	}
	return latency, cpu, nil
}
