package rendition

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pictorhq/pictor/origin/imageparams"
	"github.com/pictorhq/pictor/origin/usage"
)

// TestDedupe: within its window an identical creation reuses the
// organization's image and costs nothing; outside it, or for another
// organization, other parameters, a failed or a deleted image, it makes a
// new one; a window of 0 never reuses.
func TestDedupe(t *testing.T) {
	tests := []struct {
		name string
		// between runs after the first creation, before the second.
		between func(e *env, first *Image)
		second  func(e *env, first *Image) (orgID string, it Item)
		reused  bool
	}{
		{name: "within the window", reused: true,
			between: func(e *env, _ *Image) { e.clock.Advance(59 * time.Minute) }},
		{name: "past the window",
			between: func(e *env, _ *Image) { e.clock.Advance(61 * time.Minute) }},
		{name: "a window of 0",
			second: func(_ *env, first *Image) (string, Item) { return first.OrgID, Item{Params: html("same")} }},
		{name: "a shorter window that the image is older than",
			between: func(e *env, _ *Image) { e.clock.Advance(10 * time.Minute) },
			second: func(_ *env, first *Image) (string, Item) {
				return first.OrgID, Item{Params: html("same"), Dedupe: 5 * time.Minute}
			}},
		{name: "other parameters",
			second: func(_ *env, first *Image) (string, Item) {
				return first.OrgID, Item{Params: html("other"), Dedupe: time.Hour}
			}},
		{name: "another organization",
			second: func(e *env, _ *Image) (string, Item) {
				return e.newOrg("pro").ID, Item{Params: html("same"), Dedupe: time.Hour}
			}},
		{name: "a failed image",
			between: func(e *env, first *Image) {
				if err := e.svc.failMaster(first.ID, &Failure{Status: 400, Message: "Render failed"}, false); err != nil {
					e.t.Fatal(err)
				}
			}},
		{name: "a deleted image",
			between: func(e *env, first *Image) {
				if n, err := e.svc.Delete(context.Background(), first.OrgID, []string{first.ID}); n != 1 || err != nil {
					e.t.Fatalf("delete: %d, %v", n, err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			o := e.newOrg("pro")
			first := e.create(o, Item{Params: html("same"), Dedupe: time.Hour})
			if first.Reused || e.used(t.Context(), o) != 1 {
				t.Fatalf("first creation: reused %v, %d credits used", first.Reused, e.used(t.Context(), o))
			}
			if tt.between != nil {
				tt.between(e, first.Image)
			}
			orgID, it := o.ID, Item{Params: html("same"), Dedupe: time.Hour}
			if tt.second != nil {
				orgID, it = tt.second(e, first.Image)
			}
			owner, err := e.orgs.Get(t.Context(), orgID)
			if err != nil {
				t.Fatal(err)
			}
			before := e.used(t.Context(), owner)
			created, charge, err := e.svc.Create(context.Background(), owner, []Item{it})
			if err != nil {
				t.Fatal(err)
			}
			second := created[0]
			if second.Reused != tt.reused || (second.ID == first.ID) != tt.reused {
				t.Fatalf("second creation: image %s reused %v, first %s; want reused %v", second.ID, second.Reused, first.ID, tt.reused)
			}
			wantCharge := int64(1)
			if tt.reused {
				wantCharge = 0
			}
			if got := e.used(t.Context(), owner) - before; got != wantCharge || charge.Consumed != wantCharge || charge.Used != e.used(t.Context(), owner) {
				t.Fatalf("second creation charged %d (reported consumed %d, used %d of %d), want %d",
					got, charge.Consumed, charge.Used, e.used(t.Context(), owner), wantCharge)
			}
			if !tt.reused && it.Dedupe > 0 {
				// The newest image is the one later creations reuse.
				third := e.create(owner, Item{Params: it.Params, Dedupe: it.Dedupe})
				if !third.Reused || third.ID != second.ID {
					t.Fatalf("third creation: %s reused %v, want the second image %s", third.ID, third.Reused, second.ID)
				}
			}
		})
	}
}

// TestCreateWithinOneCall: identical items of one call (dedupe on, or the
// same content id) are one image charged once; without dedupe each item is
// an image of its own.
func TestCreateWithinOneCall(t *testing.T) {
	signed := html("signed")
	tests := []struct {
		name    string
		items   func(orgID string) []Item
		images  int
		credits int64
	}{
		{name: "dedupe", images: 1, credits: 1, items: func(string) []Item {
			return []Item{{Params: html("x"), Dedupe: time.Hour}, {Params: html("x"), Dedupe: time.Hour}}
		}},
		{name: "no dedupe", images: 2, credits: 2, items: func(string) []Item {
			return []Item{{Params: html("x")}, {Params: html("x")}}
		}},
		{name: "one content id", images: 1, credits: 1, items: func(orgID string) []Item {
			id := ContentID(orgID, &signed, "create-and-render")
			return []Item{{Params: signed, ID: id}, {Params: signed, ID: id}, {Params: signed, ID: id}}
		}},
		{name: "a jumbo image and a plain one", images: 2, credits: 3 + 1, items: func(string) []Item {
			return []Item{{Params: imageparams.Params{HTML: "j", Jumbo: &imageparams.Size{Width: 3000, Height: 10000}}}, {Params: html("p")}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			o := e.newOrg("pro")
			items := tt.items(o.ID)
			created, charge, err := e.svc.Create(context.Background(), o, items)
			if err != nil {
				t.Fatal(err)
			}
			ids := map[string]bool{}
			for _, c := range created {
				ids[c.ID] = true
			}
			if len(created) != len(items) || len(ids) != tt.images {
				t.Fatalf("%d items gave %d answers and %d images, want %d images", len(items), len(created), len(ids), tt.images)
			}
			if charge.Consumed != tt.credits || e.used(t.Context(), o) != tt.credits || charge.Allowed != o.PlanInfo().Credits {
				t.Fatalf("charge %+v, %d used; want %d of %d", charge, e.used(t.Context(), o), tt.credits, o.PlanInfo().Credits)
			}
			if n := len(e.keys(t.Context(), "org-list/"+o.ID+"/")); n != tt.images {
				t.Fatalf("%d list entries for %d images", n, tt.images)
			}
		})
	}
}

// TestSignedImageIsChargedOnce: creating under a content id that exists
// already reuses that image at no cost, whatever its state.
func TestSignedImageIsChargedOnce(t *testing.T) {
	e := newEnv(t)
	o := e.newOrg("pro")
	p := html("signed")
	id := ContentID(o.ID, &p, "create-and-render")
	first := e.create(o, Item{Params: p, ID: id})
	if first.ID != id || first.Reused {
		t.Fatalf("first creation: %s reused %v", first.ID, first.Reused)
	}
	for _, step := range []func(){func() {}, func() { e.ready(id, testPNG(t, 4, 4, 1)) }} {
		step()
		again := e.create(o, Item{Params: p, ID: id})
		if again.ID != id || !again.Reused || e.used(t.Context(), o) != 1 {
			t.Fatalf("again: %s reused %v, %d credits used", again.ID, again.Reused, e.used(t.Context(), o))
		}
	}
}

// TestCreateIsAllOrNothing: a creation the plan cannot pay for records no
// image and charges nothing, and reports the figures of the 429; one that
// reuses every image costs nothing even when the plan is used up.
func TestCreateIsAllOrNothing(t *testing.T) {
	e := newEnv(t)
	o := e.newOrg("free") // 50 credits
	var items []Item
	for i := range 49 {
		items = append(items, Item{Params: html(string(rune('A' + i))), Dedupe: time.Hour})
	}
	if _, _, err := e.svc.Create(context.Background(), o, items); err != nil {
		t.Fatal(err)
	}
	listed := len(e.keys(t.Context(), "org-list/"))
	_, charge, err := e.svc.Create(context.Background(), o, []Item{{Params: html("y")}, {Params: html("z")}})
	var le *usage.LimitError
	if !errors.Is(err, usage.ErrPlanLimit) || !errors.As(err, &le) || le.Used != 49 || le.Allowed != 50 || le.Wanted != 2 {
		t.Fatalf("over the plan: %v", err)
	}
	if charge != (Charge{Allowed: 50, Used: 49}) {
		t.Fatalf("charge of a refused creation: %+v", charge)
	}
	if e.used(t.Context(), o) != 49 || len(e.keys(t.Context(), "org-list/")) != listed || len(e.keys(t.Context(), "img/")) != listed {
		t.Fatalf("a refused creation left %d credits used, %d list entries (%d before)", e.used(t.Context(), o), len(e.keys(t.Context(), "org-list/")), listed)
	}
	// The last credit, then only reuse.
	e.create(o, Item{Params: html("y")})
	created, charge, err := e.svc.Create(context.Background(), o, items[:3])
	if err != nil || !created[0].Reused || charge.Consumed != 0 || charge.Used != 50 {
		t.Fatalf("reuse on a used-up plan: %+v (%v)", charge, err)
	}
}

// TestCredits: what an image costs.
func TestCredits(t *testing.T) {
	tests := []struct {
		name  string
		jumbo *imageparams.Size
		want  int
	}{
		{name: "plain", want: 1},
		{name: "small jumbo costs 2", jumbo: &imageparams.Size{Width: 100, Height: 100}, want: 2},
		{name: "exactly 3 credits of pixels", jumbo: &imageparams.Size{Width: 3000, Height: 10000}, want: 3},
		{name: "one pixel more", jumbo: &imageparams.Size{Width: 3000, Height: 10000 + 1}, want: 4},
		{name: "largest", jumbo: &imageparams.Size{Width: MaxSide, Height: MaxPixels / MaxSide}, want: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Credits(&imageparams.Params{HTML: "x", Jumbo: tt.jumbo}); got != tt.want {
				t.Fatalf("Credits = %d, want %d", got, tt.want)
			}
		})
	}
}
