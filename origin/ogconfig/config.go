package ogconfig

import (
	"encoding/json"
	"time"
)

// ConfigType is how an OG image is made from a page.
type ConfigType string

// Config types.
const (
	// HTMLCSS screenshots the page itself (with default_options and the
	// page's own hcti: overrides).
	HTMLCSS ConfigType = "html_css"
	// Templated renders one of the organization's templates with values
	// taken from the page's metadata.
	Templated ConfigType = "templated"
)

// OptimizationMode is how one source render is fitted to the platforms'
// image sizes.
type OptimizationMode string

// Optimization modes.
const (
	// NoOptimization serves one universal image.
	NoOptimization OptimizationMode = "no_optimization"
	// PostProcess fits one render into each platform's bounds without
	// stretching (the default).
	PostProcess OptimizationMode = "post_process"
	// SetViewport renders once per platform at that platform's size.
	SetViewport OptimizationMode = "set_viewport"
)

// Fallback is a template value taken from the best metadata of a kind
// when no single meta key is named.
type Fallback string

// Fallbacks.
const (
	// FallbackTitles is the page's best title: og:title, twitter:title,
	// then <title>.
	FallbackTitles Fallback = "titles"
	// FallbackDescriptions is the page's best description: og:description,
	// twitter:description, then the description meta.
	FallbackDescriptions Fallback = "descriptions"
)

// Mapping fills one template value from the page: from the meta tag
// MetaKey, or from Fallback. Exactly one of the two is set.
type Mapping struct {
	TemplateKey string   `json:"template_key"`
	MetaKey     string   `json:"meta_key,omitempty"`
	Fallback    Fallback `json:"fallback,omitempty"`
}

// Config is a stored OG configuration: what the OG serving path needs to
// render the image of a page of BaseURL. A disabled configuration is kept
// and returned by ByDomainID; whoever serves decides what it means.
type Config struct {
	ID       string `json:"id"`        // UUIDv7, the API's path id
	DomainID string `json:"domain_id"` // 128 random bits, the public /v1/og/{domain_id}/... id
	OrgID    string `json:"org_id"`
	// Revision is 1 at creation and grows by one at every update: with ID,
	// it names the configuration's content for image identity.
	Revision int64 `json:"revision"`

	ConfigType  ConfigType `json:"config_type"`
	Name        string     `json:"name"`        // "" when none
	Description string     `json:"description"` // "" when none
	// BaseURL is an exact origin, scheme://host[:port], lower-case, without
	// a default port or a trailing slash.
	BaseURL  string `json:"base_url"`
	Disabled bool   `json:"disabled"`
	// RefreshInterval is how long a page's metadata is reused before the
	// page is checked again.
	RefreshInterval  time.Duration    `json:"refresh_interval"`
	OptimizationMode OptimizationMode `json:"optimization_mode"`
	// ExtractValues reads the page's metadata: hcti: render overrides,
	// html:tv: template values and the meta keys of Mapping. When false
	// only the configuration itself counts.
	ExtractValues bool `json:"extract_values"`
	// DefaultOptions are image creation parameters (spec §2.2) applied to
	// every render of the configuration, as a JSON object ready for
	// field.FromJSON: validated by imageparams.Parse, normalized (numbers
	// and booleans typed, defaults left out) and restricted to
	// OptionNames. Lay a page's hcti: overrides over them with
	// imageparams.Merge, add the source, and parse the result with the
	// organization's plan cap. Never nil.
	DefaultOptions map[string]json.RawMessage `json:"default_options"`

	// TemplateID and TemplateVersion (0: the latest version at render
	// time) are set for Templated configurations only.
	TemplateID      string    `json:"template_id,omitempty"`
	TemplateVersion int       `json:"template_version,omitempty"`
	Mapping         []Mapping `json:"template_values_mapping,omitempty"`

	// Headers are sent when fetching pages of BaseURL (and, as for image
	// creation, to AdditionalHeaderOrigins): canonical names
	// (textproto form) to values.
	Headers map[string]string `json:"headers,omitempty"`
	// AdditionalHeaderOrigins are normalized origins, sorted, unique.
	AdditionalHeaderOrigins []string `json:"additional_header_origins,omitempty"`

	// MaxNewImagesPerDay and MaxNewImagesPerPeriod cap the new images
	// (each a creation that charges credits) the configuration makes in a
	// UTC day and in its organization's billing period; nil is the default
	// of the plan (EffectiveLimits), 0 serves only images that exist.
	MaxNewImagesPerDay    *int64 `json:"max_new_images_per_day,omitempty"`
	MaxNewImagesPerPeriod *int64 `json:"max_new_images_per_period,omitempty"`

	// RefreshGeneration grows by one at every refresh of all the
	// configuration's pages (Store.RequestRefresh): a page read under an
	// older generation is read again, unconditionally, at its next
	// request. Unlike Revision it is no part of any image's identity, so a
	// page that did not change keeps its image and costs nothing.
	RefreshGeneration int64 `json:"refresh_generation,omitempty"`
	// RefreshRequestedAt is when RefreshGeneration last grew.
	RefreshRequestedAt time.Time `json:"refresh_requested_at,omitzero"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Enabled is !Disabled.
func (c *Config) Enabled() bool { return !c.Disabled }
