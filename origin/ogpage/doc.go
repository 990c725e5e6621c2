// Package ogpage fetches the source page of an automatic Open Graph image
// and reads its <head>: title, descriptions, og: and twitter: values, every
// other named meta, the per-page render overrides (hcti:<param>, alias
// pictor:<param>) and template values (html:tv:<var>), and when the page
// must be fetched again. Every fetch goes through its own egress session,
// so a source page reaches exactly what a render of it could.
package ogpage
