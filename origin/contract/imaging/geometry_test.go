package imaging

import (
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/pictorhq/pictor/origin/contract/apierr"
)

func TestCropRect(t *testing.T) {
	tests := []struct {
		name  string
		query string
		w, h  int
		want  rect
		paths []string // the validation errors' paths when out of bounds
	}{
		{name: "centered square of a landscape", query: "aspect_ratio=1_1&crop_height=100%", w: 2400, h: 1260, want: rect{570, 0, 1260, 1260}},
		{name: "left third", query: "x_1=0&crop_width=33%", w: 2400, h: 1260, want: rect{0, 0, 792, 1260}},
		{name: "middle third", query: "x_1=33%&x_2=66%", w: 2400, h: 1260, want: rect{792, 0, 792, 1260}},
		{name: "x_1 alone runs to the edge", query: "x_1=100", w: 300, h: 100, want: rect{100, 0, 200, 100}},
		{name: "x_2 alone starts at 0", query: "y_2=40", w: 300, h: 100, want: rect{0, 0, 300, 40}},
		{name: "size before x_2", query: "x_2=250&crop_width=50", w: 300, h: 100, want: rect{200, 0, 50, 100}},
		{name: "size after y_1", query: "y_1=10%&crop_height=20", w: 300, h: 100, want: rect{0, 10, 300, 20}},
		{name: "origin end", query: "crop_width=100&x_origin=end&crop_height=10&y_origin=start", w: 300, h: 100, want: rect{200, 0, 100, 10}},
		{name: "center leans to start", query: "crop_width=2", w: 5, h: 5, want: rect{1, 0, 2, 5}},
		{name: "largest 16:9 in a square", query: "aspect_ratio=16_9", w: 1600, h: 1600, want: rect{0, 350, 1600, 900}},
		{name: "largest 16:9 at the top", query: "aspect_ratio=16_9&y_origin=start", w: 1600, h: 1600, want: rect{0, 0, 1600, 900}},
		{name: "largest 1:1 at the end", query: "aspect_ratio=1_1&x_origin=end", w: 300, h: 100, want: rect{200, 0, 100, 100}},
		{name: "aspect box inside x_1..", query: "aspect_ratio=1_1&x_1=250", w: 300, h: 100, want: rect{250, 25, 50, 50}},
		{name: "aspect box before x_2", query: "aspect_ratio=1_1&x_2=40&y_origin=end", w: 300, h: 100, want: rect{0, 60, 40, 40}},
		{name: "aspect from width", query: "aspect_ratio=2_1&crop_width=100&y_1=5", w: 300, h: 100, want: rect{100, 5, 100, 50}},
		{name: "aspect from range", query: "aspect_ratio=4_1&x_1=10&x_2=50", w: 300, h: 100, want: rect{10, 45, 40, 10}},
		{name: "aspect from height rounds", query: "aspect_ratio=16_9&crop_height=10", w: 300, h: 100, want: rect{141, 45, 18, 10}},
		{name: "mixed units", query: "x_1=10&x_2=50%", w: 300, h: 100, want: rect{10, 0, 140, 100}},
		{name: "whole image", query: "x_1=0&x_2=300&y_1=0%&y_2=100", w: 300, h: 100, want: rect{0, 0, 300, 100}},

		{name: "x_2 past the edge", query: "x_2=301", w: 300, h: 100, paths: []string{"x_2"}},
		{name: "range past the edge", query: "x_1=10&x_2=301", w: 300, h: 100, paths: []string{"x_1", "x_2"}},
		{name: "x_1 past the edge", query: "x_1=300", w: 300, h: 100, paths: []string{"x_1"}},
		{name: "size past the edge", query: "x_1=250&crop_width=100", w: 300, h: 100, paths: []string{"x_1", "crop_width"}},
		{name: "size before 0", query: "y_2=50&crop_height=60", w: 300, h: 100, paths: []string{"y_2", "crop_height"}},
		{name: "size over the image", query: "crop_height=101", w: 300, h: 100, paths: []string{"crop_height"}},
		{name: "mixed units empty", query: "x_1=100&x_2=50%", w: 150, h: 100, paths: []string{"x_1", "x_2"}},
		{name: "square of a portrait", query: "aspect_ratio=1_1&crop_height=100%", w: 100, h: 200, paths: []string{"aspect_ratio"}},
		{name: "derived height too tall", query: "aspect_ratio=1_2&crop_width=60", w: 300, h: 100, paths: []string{"aspect_ratio"}},
		{name: "ratio rounds to nothing", query: "aspect_ratio=1_100000", w: 300, h: 100, paths: []string{"aspect_ratio"}},
		{name: "percent rounds to nothing", query: "crop_width=0.1%", w: 300, h: 100, paths: []string{"crop_width"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(PNG, []byte(tc.query))
			if err != nil {
				t.Fatal(err)
			}
			got, err := o.Crop.rect(tc.w, tc.h, o.given)
			if tc.paths != nil {
				var e *apierr.Error
				if !errors.Is(err, ErrCropOutOfBounds) || !errors.As(err, &e) || e.Status != http.StatusBadRequest {
					t.Fatalf("error %v, want a 400 ErrCropOutOfBounds", err)
				}
				if got := errorPaths(t, err); !slices.Equal(got, tc.paths) {
					t.Fatalf("validation errors %+v, want paths %v", e.Fields, tc.paths)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("rect %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestCanonicalKeepsTheCrop runs every small span through canonical() and
// checks the crop is the same on images of many sizes: canonical forms, and
// so keys, only merge options that give the same pixels.
func TestCanonicalKeepsTheCrop(t *testing.T) {
	lengths := []Length{none, Px(0), Pct(0), Px(1), Px(2), Px(3), Px(5), Pct(Hundred / 3), Pct(Hundred / 2), Pct(660000), Pct(Hundred)}
	ratios := []Ratio{{}, {1, 1}, {2, 2}, {16, 9}, {1, 3}}
	other := []Span{{}, {Size: Px(2), Align: AlignEnd}, {From: Px(1), To: Pct(Hundred), Exact: true}}
	dims := []int{1, 2, 3, 4, 5, 7, 10, 100, 333}
	if testing.Short() {
		dims = []int{1, 3, 10}
	}
	n := 0
	for _, from := range lengths {
		for _, to := range lengths {
			for _, size := range lengths {
				for _, exact := range []bool{false, true} {
					for align := AlignCenter; align <= AlignEnd; align++ {
						s := Span{From: from, To: to, Size: size, Exact: exact, Align: align}
						for _, r := range ratios {
							for _, y := range other {
								for _, swap := range []bool{false, true} {
									c := Crop{Aspect: r, X: s, Y: y}
									if swap {
										c.X, c.Y = y, s
									}
									canon := Options{Crop: c}.canonical().Crop
									if again := (Options{Crop: canon}).canonical().Crop; again != canon {
										t.Fatalf("canonical is not idempotent: %+v then %+v", canon, again)
									}
									for _, w := range dims {
										for _, h := range dims {
											r1, bad1 := c.resolve(w, h)
											r2, bad2 := canon.resolve(w, h)
											n++
											if (bad1 == nil) != (bad2 == nil) || r1 != r2 {
												t.Fatalf("%+v → %+v on %d×%d: %v %+v vs %v %+v", c, canon, w, h, r1, bad1, r2, bad2)
											}
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d crops compared", n)
}

func TestTarget(t *testing.T) {
	tests := []struct {
		name   string
		o      Options
		w, h   int
		tw, th int
		cover  bool
	}{
		{"none", Options{}, 300, 100, 300, 100, false},
		{"width keeps ratio", Options{Width: 600}, 2400, 1260, 600, 315, false},
		{"height keeps ratio", Options{Height: 315}, 2400, 1260, 600, 315, false},
		{"rounds half up", Options{Width: 3}, 2, 1, 3, 2, false},
		{"upscales", Options{Width: 900}, 300, 100, 900, 300, false},
		{"at least a pixel", Options{Width: 10}, 5000, 1, 10, 1, false},
		{"both cover", Options{Width: 100, Height: 100}, 300, 100, 100, 100, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tw, th, cover := tc.o.target(tc.w, tc.h)
			if tw != tc.tw || th != tc.th || cover != tc.cover {
				t.Fatalf("target %d×%d cover=%v, want %d×%d cover=%v", tw, th, cover, tc.tw, tc.th, tc.cover)
			}
		})
	}
}
