package imaging

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apierr"
)

func span(from, to, size Length, exact bool, align Align) Span {
	return Span{From: from, To: to, Size: size, Exact: exact, Align: align}
}

var none Length

func TestParse(t *testing.T) {
	tests := []struct {
		name   string
		format Format
		query  string
		want   Options
		errs   []string // paths of validation_errors, in order
	}{
		{name: "empty", query: ""},
		{name: "width", query: "width=600", want: Options{Width: 600}},
		{name: "width and height", query: "width=1&height=5000", want: Options{Width: 1, Height: 5000}},
		{name: "width 0 is not set", query: "width=0", want: Options{}},
		{name: "leading zeros", query: "width=0600", want: Options{Width: 600}},
		{name: "width over 5000", query: "width=5001", errs: []string{"width"}},
		{name: "width negative", query: "width=-1", errs: []string{"width"}},
		{name: "width fraction", query: "width=1.5", errs: []string{"width"}},
		{name: "width exponent", query: "width=6e2", errs: []string{"width"}},
		{name: "width space", query: "width=+600", errs: []string{"width"}},
		{name: "width empty", query: "width=", errs: []string{"width"}},
		{name: "width without =", query: "width", errs: []string{"width"}},
		{name: "height over 5000", query: "height=99999999999999999999999", errs: []string{"height"}},
		{name: "dpi bounds", query: "dpi=30", want: Options{DPI: 30}},
		{name: "dpi max", query: "dpi=600", want: Options{DPI: 600}},
		{name: "dpi low", query: "dpi=29", errs: []string{"dpi"}},
		{name: "dpi high", query: "dpi=601", errs: []string{"dpi"}},
		{name: "dpi zero", query: "dpi=0", errs: []string{"dpi"}},
		{name: "dpi dropped for webp", format: WebP, query: "dpi=300&width=10", want: Options{Width: 10}},
		{name: "dpi kept for jpg", format: JPEG, query: "dpi=300", want: Options{DPI: 300}},
		{name: "dl=1", query: "dl=1", want: Options{Download: true}},
		{name: "dl=true", query: "dl=TRUE", want: Options{Download: true}},
		{name: "dl=0", query: "dl=0", want: Options{}},
		{name: "dl=2", query: "dl=2", errs: []string{"dl"}},
		{name: "dl=yes", query: "dl=yes", errs: []string{"dl"}},
		{name: "aspect", query: "aspect_ratio=16_9", want: Options{Crop: Crop{Aspect: Ratio{16, 9}}}},
		{name: "aspect reduced", query: "aspect_ratio=32_18", want: Options{Crop: Crop{Aspect: Ratio{16, 9}}}},
		{name: "aspect colon", query: "aspect_ratio=16:9", want: Options{Crop: Crop{Aspect: Ratio{16, 9}}}},
		{name: "aspect encoded colon", query: "aspect_ratio=4%3A3", want: Options{Crop: Crop{Aspect: Ratio{4, 3}}}},
		{name: "aspect x", query: "aspect_ratio=16x9", errs: []string{"aspect_ratio"}},
		{name: "aspect zero", query: "aspect_ratio=0_1", errs: []string{"aspect_ratio"}},
		{name: "aspect half", query: "aspect_ratio=16_", errs: []string{"aspect_ratio"}},
		{name: "aspect three", query: "aspect_ratio=16_9_1", errs: []string{"aspect_ratio"}},
		{name: "aspect huge", query: "aspect_ratio=100001_1", errs: []string{"aspect_ratio"}},
		{name: "unknown ignored", query: "foo=bar&Width=7&utm_source=x&=1&&x", want: Options{}},
		{name: "last one counts", query: "width=100&width=200", want: Options{Width: 200}},
		{name: "last valid one counts", query: "width=abc&width=200", want: Options{Width: 200}},
		{name: "last invalid one counts", query: "width=200&width=abc", errs: []string{"width"}},
		{name: "encoded key", query: "wid%74h=300", want: Options{Width: 300}},
		{name: "long value", query: "width=" + strings.Repeat("0", 60) + "1", errs: []string{"width"}},
		{
			name:  "left third",
			query: "x_1=0&crop_width=33%",
			want:  Options{Crop: Crop{X: span(none, none, Pct(330000), false, AlignStart)}},
		},
		{
			name:  "middle third",
			query: "x_1=33%&x_2=66%",
			want:  Options{Crop: Crop{X: span(Pct(330000), Pct(660000), none, false, AlignCenter)}},
		},
		{
			name:  "centered square",
			query: "aspect_ratio=1_1&crop_height=100%",
			want:  Options{Crop: Crop{Aspect: Ratio{1, 1}, Y: span(none, none, none, true, AlignCenter)}},
		},
		{name: "percent encoded percent", query: "x_1=12.5%25", want: Options{Crop: Crop{X: span(Pct(125000), none, none, false, AlignCenter)}}},
		{name: "percent rounds on fifth decimal", query: "y_1=33.33335%", want: Options{Crop: Crop{Y: span(Pct(333334), none, none, false, AlignCenter)}}},
		{name: "percent truncates after", query: "y_1=33.333349999%", want: Options{Crop: Crop{Y: span(Pct(333333), none, none, false, AlignCenter)}}},
		{name: "pixels", query: "x_1=10&x_2=20&y_1=5&y_2=15", want: Options{Crop: Crop{
			X: span(Px(10), Px(20), none, false, AlignCenter), Y: span(Px(5), Px(15), none, false, AlignCenter),
		}}},
		{name: "x_2 alone", query: "x_2=500", want: Options{Crop: Crop{X: span(none, none, Px(500), false, AlignStart)}}},
		{name: "x_2 with size", query: "x_2=500&crop_width=100", want: Options{Crop: Crop{X: span(none, Px(500), Px(100), false, AlignEnd)}}},
		{name: "origin end", query: "crop_width=50%&x_origin=end", want: Options{Crop: Crop{X: span(none, none, Pct(500000), false, AlignEnd)}}},
		{name: "origin with aspect", query: "aspect_ratio=1_1&y_origin=start", want: Options{Crop: Crop{Aspect: Ratio{1, 1}, Y: span(none, none, none, false, AlignStart)}}},
		{name: "percent over 100", query: "x_2=100.0001%", errs: []string{"x_2"}},
		{name: "percent 101", query: "crop_width=101%", errs: []string{"crop_width"}},
		{name: "percent dot only", query: "x_1=5.%", errs: []string{"x_1"}},
		{name: "percent leading dot", query: "x_1=.5%", errs: []string{"x_1"}},
		{name: "pixels fraction", query: "x_1=5.5", errs: []string{"x_1"}},
		{name: "pixels unit", query: "x_1=5px", errs: []string{"x_1"}},
		{name: "pixels too many", query: "y_2=1000001", errs: []string{"y_2"}},
		{name: "negative", query: "y_1=-5", errs: []string{"y_1"}},
		{name: "origin word", query: "x_origin=left&crop_width=5", errs: []string{"x_origin"}},
		{name: "origin with x_1", query: "x_origin=start&x_1=5&crop_width=5", errs: []string{"x_origin"}},
		{name: "origin with y_2", query: "y_origin=end&y_2=5", errs: []string{"y_origin", "y_origin"}},
		{name: "origin alone", query: "x_origin=end", errs: []string{"x_origin"}},
		{name: "over-determined axis", query: "x_1=1&x_2=5&crop_width=3", errs: []string{"crop_width"}},
		{name: "x_2 equal x_1", query: "x_1=50&x_2=50", errs: []string{"x_2"}},
		{name: "x_2 before x_1", query: "y_1=50%&y_2=40%", errs: []string{"y_2"}},
		{name: "x_2 zero", query: "x_2=0", errs: []string{"x_2"}},
		{name: "x_2 zero percent", query: "x_2=0%", errs: []string{"x_2"}},
		{name: "x_1 at 100%", query: "x_1=100%", errs: []string{"x_1"}},
		{name: "mixed units left to Apply", query: "x_1=100&x_2=50%", want: Options{Crop: Crop{X: span(Px(100), Pct(500000), none, false, AlignCenter)}}},
		{name: "zero size", query: "crop_width=0", errs: []string{"crop_width"}},
		{name: "zero percent size", query: "crop_height=0%", errs: []string{"crop_height"}},
		{name: "aspect over-determined", query: "aspect_ratio=1_1&crop_width=10&crop_height=10", errs: []string{"aspect_ratio"}},
		{name: "aspect over-determined by range", query: "aspect_ratio=1_1&x_1=1&x_2=5&crop_height=5", errs: []string{"aspect_ratio"}},
		{name: "aspect with range and anchor", query: "aspect_ratio=1_1&x_1=1&x_2=5&y_1=1", want: Options{Crop: Crop{
			Aspect: Ratio{1, 1}, X: span(Px(1), Px(5), none, true, AlignCenter), Y: span(Px(1), none, none, false, AlignStart),
		}}},
		{name: "every error at once", query: "width=x&dpi=1&dl=maybe&x_1=z", errs: []string{"width", "dpi", "dl", "x_1"}},
		{name: "pdf dl", format: PDF, query: "dl=1&utm=2", want: Options{Download: true}},
		{name: "pdf width", format: PDF, query: "width=100&crop_width=5&dl=1", errs: []string{"width", "crop_width"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.format
			if f == "" {
				f = PNG
			}
			got, err := Parse(f, []byte(tc.query))
			if tc.errs != nil {
				if got := errorPaths(t, err); !slices.Equal(got, tc.errs) {
					t.Fatalf("error paths %v, want %v (%v)", got, tc.errs, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if got = bare(got); got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// errorPaths checks err is a 400 with validation errors and returns their paths.
func errorPaths(t *testing.T, err error) []string {
	t.Helper()
	var e *apierr.Error
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest || len(e.Fields) == 0 {
		t.Fatalf("error %v is not a 400 with validation errors", err)
	}
	var paths []string
	for _, f := range e.Fields {
		if f.Message == "" {
			t.Fatalf("empty message for %s", f.Path)
		}
		paths = append(paths, f.Path)
	}
	return paths
}

// bare drops what Parse records for error messages only.
func bare(o Options) Options {
	o.given = 0
	return o
}

func key(t *testing.T, f Format, query string) string {
	t.Helper()
	o, err := Parse(f, []byte(query))
	if err != nil {
		t.Fatalf("%q: %v", query, err)
	}
	return string(o.Key(nil))
}

func TestKeyEquivalent(t *testing.T) {
	tests := []struct {
		name    string
		want    string
		queries []string
	}{
		{"no transform", "", []string{
			"", "width=0", "height=0&dl=1", "foo=bar", "dl=0", "x_1=0", "x_1=0%", "y_2=100%", "x_1=0&x_2=100%",
			"crop_width=100%", "crop_height=100%&y_origin=end", "x_1=0%&crop_width=100%",
		}},
		{"order, defaults and unknowns", "w=600&h=300", []string{
			"width=600&height=300", "height=300&width=600", "width=0600&height=300&utm=1", "dl=1&width=600&height=300",
		}},
		{"aspect ratio terms and centering", "ar=16:9", []string{
			"aspect_ratio=16_9", "aspect_ratio=32_18", "aspect_ratio=16:9", "aspect_ratio=16_9&x_origin=center",
			"aspect_ratio=16_9&x_origin=center&y_origin=center",
		}},
		{"percent spellings", "x=33%:66%", []string{
			"x_1=33%&x_2=66%", "x_2=66%&x_1=33%", "x_1=33.0%&x_2=66.00%", "x_1=33%25&x_2=66%25", "x_1=033%&x_2=66.000001%",
		}},
		{"centered by default", "x=/50", []string{"crop_width=50", "crop_width=50&x_origin=center"}},
		{"left third", "x=/33%@start", []string{"x_1=0&crop_width=33%", "crop_width=33%&x_origin=start", "x_2=33%", "x_1=0%&x_2=33%"}},
		{"anchored at the end", "x=/10@end", []string{"x_2=100%&crop_width=10", "crop_width=10&x_origin=end"}},
		{"from the top", "y=/10@start", []string{
			"y_1=0&crop_height=10", "crop_height=10&y_origin=start", "y_2=10", "y_1=0&y_2=10", "y_2=10&crop_height=10",
		}},
		{"open end without aspect", "x=20:", []string{"x_1=20", "x_1=20&x_2=100%"}},
		{"full width fixes the ratio", "ar=1:1&x=/exact", []string{
			"aspect_ratio=1_1&x_1=0&x_2=100%", "aspect_ratio=1_1&crop_width=100%", "aspect_ratio=1_1&crop_width=100%&x_origin=end",
			"aspect_ratio=2_2&x_2=100%&crop_width=100%",
		}},
		{"first pixels fix the ratio", "ar=1:1&x=/40@start", []string{
			"aspect_ratio=1_1&x_1=0&x_2=40", "aspect_ratio=1_1&crop_width=40&x_origin=start", "aspect_ratio=1_1&x_2=40&crop_width=40",
		}},
		{"pixel range equal to size", "ar=1:1&x=10:50/exact", []string{"aspect_ratio=1_1&x_1=10&x_2=50"}},
		{"dpi", "dpi=72", []string{"dpi=72", "dpi=072&dl=1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, q := range tc.queries {
				if got := key(t, PNG, q); got != tc.want {
					t.Errorf("%q: key %q, want %q", q, got, tc.want)
				}
			}
		})
	}
}

// TestKeyDistinct lists options that look alike but give different images
// on some image: their keys must differ.
func TestKeyDistinct(t *testing.T) {
	tests := []struct {
		name string
		a, b string
	}{
		{"open end vs full range under aspect", "aspect_ratio=1_1&x_1=10", "aspect_ratio=1_1&x_1=10&x_2=100%"},
		{"centered vs start under aspect", "aspect_ratio=1_1", "aspect_ratio=1_1&x_1=0"},
		{"largest box vs full width", "aspect_ratio=1_1", "aspect_ratio=1_1&x_1=0&x_2=100%"},
		{"centered half vs quarter range (rounding)", "crop_width=50%", "x_1=25%&x_2=75%"},
		{"percent size vs open end (rounding)", "x_1=50%&crop_width=50%", "x_1=50%"},
		{"percent range vs percent size (rounding)", "x_1=33%&x_2=66%", "x_1=33%&crop_width=33%"},
		{"pixels vs percent", "crop_width=100", "crop_width=100%"},
		{"width vs height", "width=100", "height=100"},
		{"box vs width", "width=100&height=100", "width=100"},
		{"ratio orientation", "aspect_ratio=16_9", "aspect_ratio=9_16"},
		{"left third vs centered third", "x_1=0&crop_width=33%", "crop_width=33%"},
		{"dpi vs none", "dpi=72", ""},
		{"x vs y", "crop_width=10", "crop_height=10"},
		{"start from open end", "x_1=10&x_2=100%&aspect_ratio=1_1", "x_1=10&crop_width=100%&aspect_ratio=1_1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if ka, kb := key(t, PNG, tc.a), key(t, PNG, tc.b); ka == kb {
				t.Fatalf("%q and %q share key %q", tc.a, tc.b, ka)
			}
		})
	}
}

func TestSuffix(t *testing.T) {
	for q, want := range map[string]string{
		"":                              "",
		"dl=1":                          "",
		"width=400":                     "_w-400",
		"width=400&height=300":          "_w-400_h-300",
		"dpi=144":                       "_dpi-144",
		"aspect_ratio=16_9":             "_ar-16~9",
		"x_1=10&x_2=200":                "_x-10~200",
		"crop_width=33.5%&x_origin=end": "_x-!33.5p+end",
	} {
		o, err := Parse(PNG, []byte(q))
		if err != nil {
			t.Fatalf("%q: %v", q, err)
		}
		if got := string(o.Suffix([]byte("id"))); got != "id"+want {
			t.Errorf("%q: suffix %q, want %q", q, got, "id"+want)
		}
		checkSuffix(t, o)
	}
}

// checkSuffix fails unless o's suffix uses only characters safe in an S3
// object key and maps back to o's key.
func checkSuffix(t *testing.T, o Options) {
	t.Helper()
	s, k := o.Suffix(nil), o.Key(nil)
	if len(k) == 0 {
		if len(s) != 0 {
			t.Fatalf("identity options have suffix %q", s)
		}
		return
	}
	back := map[byte]byte{'_': '&', '-': '=', '~': ':', '!': '/', '+': '@'}
	if len(s) != len(k)+1 || s[0] != '_' {
		t.Fatalf("suffix %q of key %q", s, k)
	}
	for i, c := range s[1:] {
		safe := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("_-~!+.", c) >= 0
		if !safe {
			t.Fatalf("suffix %q has %q, unsafe in an object key", s, c)
		}
		want := k[i]
		if b, ok := back[c]; ok {
			c = b
		} else if c == 'p' && i > 0 && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			c = '%' // a percent sign follows a number; the p of dpi follows a d
		}
		if c != want {
			t.Fatalf("suffix %q does not map back to key %q", s, k)
		}
	}
}

func TestIsParam(t *testing.T) {
	for _, name := range paramNames {
		if !IsParam(name) {
			t.Errorf("IsParam(%q) = false", name)
		}
	}
	for _, name := range []string{"", "widht", "format", "Width"} {
		if IsParam(name) {
			t.Errorf("IsParam(%q) = true", name)
		}
	}
}

func TestIsIdentity(t *testing.T) {
	for q, want := range map[string]bool{
		"": true, "dl=1": true, "x_1=0": true, "crop_width=100%": true, "utm=5": true,
		"dpi=72": false, "width=10": false, "aspect_ratio=1_1": false, "x_1=1": false,
	} {
		o, err := Parse(PNG, []byte(q))
		if err != nil {
			t.Fatal(err)
		}
		if o.IsIdentity() != want {
			t.Errorf("%q: IsIdentity %v", q, !want)
		}
		if o.IsIdentity() != (len(o.Key(nil)) == 0) {
			t.Errorf("%q: IsIdentity disagrees with Key %q", q, o.Key(nil))
		}
	}
	if (Options{Crop: Crop{X: Span{From: Px(0), To: Pct(Hundred)}}}).IsIdentity() != true {
		t.Error("hand-built full span is not the identity")
	}
}

func TestParseAndKeyDoNotAllocate(t *testing.T) {
	q := []byte("width=600&height=315&dpi=144&dl=1&aspect_ratio=16_9&x_1=12.5%25&x_2=90%&y_origin=end&utm_source=news")
	buf := make([]byte, 0, 128)
	var o Options
	var err error
	allocs := testing.AllocsPerRun(100, func() {
		o, err = Parse(JPEG, q)
		buf = o.Key(buf[:0])
	})
	if err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Fatalf("%v allocations per Parse+Key", allocs)
	}
	// y_origin=end aligns the height derived from the x range and the ratio.
	if want := "w=600&h=315&dpi=144&ar=16:9&x=12.5%:90%/exact&y=@end"; string(buf) != want {
		t.Fatalf("key %q, want %q", buf, want)
	}
}

// toQuery writes canonical options back as a query, the inverse of Parse.
func toQuery(o Options) string {
	var q []string
	add := func(k, v string) { q = append(q, k+"="+strings.ReplaceAll(v, "%", "%25")) }
	if o.Width > 0 {
		add("width", strconv.Itoa(o.Width))
	}
	if o.Height > 0 {
		add("height", strconv.Itoa(o.Height))
	}
	if o.DPI != 0 {
		add("dpi", strconv.Itoa(o.DPI))
	}
	if o.Download {
		add("dl", "1")
	}
	if a := o.Crop.Aspect; a.W > 0 {
		add("aspect_ratio", strconv.FormatInt(a.W, 10)+"_"+strconv.FormatInt(a.H, 10))
	}
	for _, ax := range []struct {
		s          Span
		name, size string
	}{{o.Crop.X, "x", "crop_width"}, {o.Crop.Y, "y", "crop_height"}} {
		s := ax.s
		from, to := s.From, s.To
		if s.Exact {
			if !from.set() {
				from = Px(0)
			}
			if !to.set() {
				to = Pct(Hundred)
			}
		}
		if from.set() {
			add(ax.name+"_1", string(appendLength(nil, from)))
		}
		if to.set() {
			add(ax.name+"_2", string(appendLength(nil, to)))
		}
		if s.Size.set() {
			add(ax.size, string(appendLength(nil, s.Size)))
		}
		if !from.set() && !to.set() && s.Align != AlignCenter {
			add(ax.name+"_origin", map[Align]string{AlignStart: "start", AlignEnd: "end"}[s.Align])
		}
	}
	return strings.Join(q, "&")
}

var fuzzDims = [][2]int{{1, 1}, {2, 3}, {3, 2}, {7, 5}, {10, 10}, {99, 101}, {640, 360}, {2400, 1260}, {1260, 2400}}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "width=600", "width=600&height=315", "dpi=300&dl=1", "aspect_ratio=1_1&crop_height=100%",
		"x_1=0&crop_width=33%", "x_1=33%&x_2=66%", "aspect_ratio=16_9&y_origin=start", "x_2=500&crop_width=100",
		"x_1=12.5%25&y_1=3&y_2=90%&width=10", "x_origin=end&crop_width=10", "crop_height=1&y_origin=center",
		"aspect_ratio=3_1&x_1=5", "aspect_ratio=1_3&y_2=50%", "width=%35&x_1=%", "dl=on&dl=off",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		o, err := Parse(PNG, []byte(query))
		if err != nil {
			var e *apierr.Error
			if !errors.As(err, &e) || e.Status != http.StatusBadRequest || len(e.Fields) == 0 {
				t.Fatalf("error %v is not a 400 with validation errors", err)
			}
			for _, fe := range e.Fields {
				if !slices.Contains(paramNames[:], fe.Path) {
					t.Fatalf("path %q names no parameter", fe.Path)
				}
			}
			return
		}
		if o != o.canonical() { // canonical keeps given
			t.Fatalf("Parse returned a non-canonical %+v", o)
		}
		if err := o.check(); err != nil {
			t.Fatalf("Parse returned out-of-range options: %v", err)
		}
		// The canonical form writes back to a query that parses to itself.
		back := toQuery(o)
		o2, err := Parse(PNG, []byte(back))
		if err != nil || bare(o2) != bare(o) {
			t.Fatalf("%q → %+v → %q → %+v, %v", query, o, back, o2, err)
		}
		// The object-key suffix is the key in safe characters, one for one:
		// it maps back to the key, so different keys never share a suffix.
		checkSuffix(t, o)
		// Canonicalization never changes the crop: equal keys mean equal images.
		raw, _ := parse(PNG, []byte(query))
		for _, d := range fuzzDims {
			r1, err1 := raw.Crop.rect(d[0], d[1], 0)
			r2, err2 := o.Crop.rect(d[0], d[1], o.given)
			if (err1 == nil) != (err2 == nil) || r1 != r2 {
				t.Fatalf("%q on %v: raw %v %v, canonical %v %v", query, d, r1, err1, r2, err2)
			}
			if err2 != nil && !errors.Is(err2, ErrCropOutOfBounds) {
				t.Fatalf("crop error %v is not ErrCropOutOfBounds", err2)
			}
			if err2 == nil && (r2.X < 0 || r2.Y < 0 || r2.W < 1 || r2.H < 1 || r2.X+r2.W > d[0] || r2.Y+r2.H > d[1]) {
				t.Fatalf("%q on %v: crop %v leaves the image", query, d, r2)
			}
		}
	})
}

func TestParseFormat(t *testing.T) {
	tests := []struct {
		ext  string
		want Format
		ok   bool
		mime string
	}{
		{"", PNG, true, "image/png"},
		{"png", PNG, true, "image/png"},
		{"jpg", JPEG, true, "image/jpeg"},
		{"webp", WebP, true, "image/webp"},
		{"pdf", PDF, true, "application/pdf"},
		{"PNG", PNG, true, "image/png"},
		{"Png", PNG, true, "image/png"},
		{"JPG", JPEG, true, "image/jpeg"},
		{"jpeg", JPEG, true, "image/jpeg"},
		{"JPEG", JPEG, true, "image/jpeg"},
		{"Jpeg", JPEG, true, "image/jpeg"},
		{"WEBP", WebP, true, "image/webp"},
		{"wEbP", WebP, true, "image/webp"},
		{"PDF", PDF, true, "application/pdf"},
		{".png", "", false, ""},
		{"png.", "", false, ""},
		{"pngx", "", false, ""},
		{"jpe", "", false, ""},
		{"gif", "", false, ""},
		{"png ", "", false, ""},
		{"webpp", "", false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.ext, func(t *testing.T) {
			f, ok := ParseFormat(tc.ext)
			if f != tc.want || ok != tc.ok {
				t.Fatalf("ParseFormat(%q) = %q, %v", tc.ext, f, ok)
			}
			if ok && f.ContentType() != tc.mime {
				t.Fatalf("content type %q", f.ContentType())
			}
		})
	}
}

// FuzzParseFormat: an extension names a format exactly when its ASCII
// lower-case form is one of the spellings, and then always the canonical
// one.
func FuzzParseFormat(f *testing.F) {
	for _, s := range []string{"", "png", "PNG", "jpeg", "JPG", "WebP", "pdf", "gif", "png.", "\u212a", "jpegg"} {
		f.Add(s)
	}
	canonical := map[string]Format{"": PNG, "png": PNG, "jpg": JPEG, "jpeg": JPEG, "webp": WebP, "pdf": PDF}
	f.Fuzz(func(t *testing.T, ext string) {
		lower := []byte(ext)
		for i, c := range lower {
			if 'A' <= c && c <= 'Z' {
				lower[i] = c + 'a' - 'A'
			}
		}
		want, wantOK := canonical[string(lower)]
		got, ok := ParseFormat(ext)
		if got != want || ok != wantOK {
			t.Fatalf("ParseFormat(%q) = %q, %v; want %q, %v", ext, got, ok, want, wantOK)
		}
	})
}
