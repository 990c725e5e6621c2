package render

import (
	"testing"
	"time"
)

// TestLargeCapturesWaitLonger: a capture's wait for its frame grows with
// its area, so a 16-megapixel strip that is slow to encode on a busy
// machine is not taken for a page that gives no frame.
func TestLargeCapturesWaitLonger(t *testing.T) {
	small := shotWait(1200 * 630 * 4)
	if small < shotTimeout || small > shotTimeout+5*time.Second {
		t.Errorf("a card at scale 2 waits %v, want about %v", small, shotTimeout)
	}
	if strip := shotWait(maxShotPixels); strip < 2*shotTimeout {
		t.Errorf("a full strip waits %v, less than twice a small capture's %v", strip, shotTimeout)
	}
}
