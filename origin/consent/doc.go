// Package consent blocks cookie-consent banners and popups in renders
// (block_consent_banners) with a rule set compiled into the binary:
// EasyList Cookie's element-hiding rules plus Pictor's rules for consent
// platforms. BlockURL fails the platforms' loaders, CSS hides banners and
// Script, run after load, hides what is left and unlocks scrolling. It works
// offline; see NOTICE for the sources and their licenses.
package consent
