// Package baseline runs the tools Pictor is measured against: nginx
// serving the same bytes as the edge, a cold `chromium --screenshot` per
// card as a naive service would, a vipsthumbnail process per resize, and
// warm Puppeteer pages (pinned puppeteer-core, installed with npm ci) on
// the Chromium Pictor runs. It installs a missing tool with apt-get when
// it can.
package baseline
