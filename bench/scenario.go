package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pictorhq/pictor/bench/load"
	"github.com/pictorhq/pictor/bench/pictor"
)

// Scenario is one benchmark. Run drives load and returns a Result per run
// it made (a scenario may measure several: sequential and concurrent, or
// Pictor and the tool it is compared with). On error it returns what it
// measured before the error too.
type Scenario struct {
	// Name is what --scenarios selects and the prefix of its results' names.
	Name string
	// About says in one line what is measured.
	About string
	// NeedsPictor starts `pictor serve` before Run, in Env.Pictor.
	NeedsPictor bool
	// ServeFlags are extra flags of the `pictor serve` it needs (a small
	// memory cache, say); scenarios with the same flags share a server,
	// others get a fresh one.
	ServeFlags []string
	// OwnServer starts a fresh `pictor serve` for this scenario alone, even
	// when the one before has the same flags, and none after shares it:
	// its caches hold what the scenario put there and nothing else.
	OwnServer bool
	// Run measures.
	Run func(ctx context.Context, env *Env) ([]*load.Result, error)
}

// Env is what a scenario runs with.
type Env struct {
	Config *Config
	// Pictor is the running server, for scenarios that need it.
	Pictor *pictor.Server
	// WorkDir is a fresh temporary directory, removed after the scenario.
	WorkDir string
	// Progress shows runs live; pass it to load.Drive.
	Progress *load.Progress
}

// Scenarios returns every scenario, in the order they run by default:
// those sharing the default server first, the baseline needing no server
// last, so that it runs on a quiet machine.
func Scenarios() []Scenario {
	return []Scenario{
		renderCardScenario(), renderVsPageScenario(), hotImageScenario(), resizeScenario(), zipf10k.scenario(), zipf10kHeavy.scenario(),
		zipf100k.scenario(), ogHotScenario(), ogFirstScenario(),
		clusterScenario(), chromiumCLIScenario(), soakScenario(), renderIsolationScenario(),
	}
}

// Select returns the scenarios named, in the order named; no names
// selects all.
func Select(all []Scenario, names []string) ([]Scenario, error) {
	if len(names) == 0 {
		return all, nil
	}
	var out []Scenario
	for _, n := range names {
		i := slices.IndexFunc(all, func(s Scenario) bool { return s.Name == n })
		if i < 0 {
			known := make([]string, len(all))
			for j, s := range all {
				known[j] = s.Name
			}
			return nil, fmt.Errorf("--scenarios: %w %q (have %s)", ErrUnknownScenario, n, strings.Join(known, ", "))
		}
		if !slices.ContainsFunc(out, func(s Scenario) bool { return s.Name == n }) {
			out = append(out, all[i])
		}
	}
	return out, nil
}
