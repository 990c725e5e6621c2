package contract

import "strings"

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
