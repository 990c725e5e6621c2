package mcpserver

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/pictorhq/pictor/origin/imageparams/schema"
	"github.com/pictorhq/pictor/origin/ogconfig"
)

// TestImageToolSchemas: the image tools offer the table's parameters, and
// between them every one.
func TestImageToolSchemas(t *testing.T) {
	byName := map[string]*tool{}
	for _, tl := range tools() {
		byName[tl.name] = tl
	}
	offered := map[string]bool{}
	own := []string{"include_image", "template_version"}
	check := func(where string, s *jsonschema.Schema) {
		for name := range s.Properties {
			if slices.Contains(own, name) {
				continue
			}
			if !slices.ContainsFunc(schema.Params(), func(p schema.Param) bool { return p.Name == name }) {
				t.Errorf("%s offers %s, which is not in the parameter table", where, name)
			}
			offered[name] = true
		}
		if len(s.PropertyOrder) != len(s.Properties) {
			t.Errorf("%s: property order %v does not list every property", where, s.PropertyOrder)
		}
	}
	for _, name := range []string{"create_image", "create_url_image", "create_templated_image"} {
		check(name, byName[name].input)
	}
	batch := byName["create_batch_images"].input
	check("create_batch_images default_options", batch.Properties["default_options"])
	check("create_batch_images variations", batch.Properties["variations"].Items)
	for _, p := range schema.Params() {
		if !offered[p.Name] {
			t.Errorf("no image tool offers %s", p.Name)
		}
	}
	if got := byName["create_image"].input.Required; !slices.Equal(got, []string{"html"}) {
		t.Errorf("create_image requires %v", got)
	}
	if got := byName["create_url_image"].input.Required; !slices.Equal(got, []string{"url"}) {
		t.Errorf("create_url_image requires %v", got)
	}
	// OG default_options take exactly the options ogconfig accepts.
	og := byName["create_og_config"].input.Properties["content"].Properties["default_options"]
	var names []string
	for name := range og.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(ogconfig.OptionNames))
	if !slices.Equal(names, want) {
		t.Errorf("OG default_options offer %v, ogconfig accepts %v", names, want)
	}
	// Every schema marshals (jsonschema checks its own rules).
	for _, tl := range tools() {
		if _, err := json.Marshal(tl.mcpTool()); err != nil {
			t.Errorf("%s: %v", tl.name, err)
		}
		if !strings.Contains(tl.description, "Needs "+string(tl.permission)) {
			t.Errorf("%s: the description does not say it needs %s", tl.name, tl.permission)
		}
	}
}
