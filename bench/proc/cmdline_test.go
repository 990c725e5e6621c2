package proc

import (
	"os"
	"slices"
	"testing"
)

func TestDescendants(t *testing.T) {
	stats := []procStat{
		{pid: 1, ppid: 0}, {pid: 10, ppid: 1}, {pid: 12, ppid: 10}, {pid: 11, ppid: 10},
		{pid: 20, ppid: 12}, {pid: 13, ppid: 1}, {pid: 30, ppid: 11},
	}
	tests := []struct {
		name string
		root int
		want []int
	}{
		{"children first, then grandchildren", 10, []int{11, 12, 20, 30}},
		{"a leaf", 20, nil},
		{"unknown", 99, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := descendants(stats, tt.root); !slices.Equal(got, tt.want) {
				t.Fatalf("descendants(%d) = %v, want %v", tt.root, got, tt.want)
			}
		})
	}
}

func TestParseCmdline(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"program and flags", "/usr/lib/chromium/chromium\x00--headless\x00--x=a b\x00", []string{"/usr/lib/chromium/chromium", "--headless", "--x=a b"}},
		{"an empty argument kept", "a\x00\x00b\x00", []string{"a", "", "b"}},
		{"a kernel thread", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseCmdline([]byte(tt.in)); !slices.Equal(got, tt.want) {
				t.Fatalf("parseCmdline(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestCmdlineOfSelf reads this test's own command line.
func TestCmdlineOfSelf(t *testing.T) {
	got, err := Cmdline(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, os.Args) {
		t.Fatalf("Cmdline(self) = %q, want %q", got, os.Args)
	}
}
