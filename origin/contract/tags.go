package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// TemplateTag is the purge tag of everything rendered from a template's
// signed URLs: a TagsPurged event with it follows a change to the template.
func TemplateTag(templateID string) string { return "tpl:" + templateID }

// KeyTag is the purge tag of everything a signing key's URLs produced: a
// KeyDisabled event carries it when the key is disabled or deleted. It is
// the key's api_id itself.
func KeyTag(apiID string) string { return apiID }

// JoinTags is the value of HeaderTag for tags.
func JoinTags(tags ...string) string { return strings.Join(tags, " ") }

// OGConfigTag is the purge tag of every OG image an OG configuration
// produced: a TagsPurged event with it follows a change to the
// configuration or its deletion.
func OGConfigTag(configID string) string { return "og:" + configID }

// OGPageTag is the purge tag of the OG images of one page of an OG
// configuration (its path in ogplatform.NormalizePath's spelling): a
// TagsPurged event with it follows a refresh that changed the page's card.
// The path is hashed (128 bits of SHA-256), so that the tag stays short
// whatever the path.
func OGPageTag(configID, path string) string {
	sum := sha256.Sum256([]byte(path))
	return "og:" + configID + ":" + hex.EncodeToString(sum[:16])
}
