// Package chromiumtest starts the Debian Chromium for tests that drive a
// real browser tab directly. Only tests import it.
package chromiumtest
