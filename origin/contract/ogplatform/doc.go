// Package ogplatform names the platform a social-card crawler belongs to,
// from its User-Agent, and the size of image that platform shows. The edge
// keys OG images on the platform (never on the raw header, so no
// Vary: User-Agent), and the origin renders or fits each platform's size.
package ogplatform
