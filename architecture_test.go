package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestArchitectureLayers checks docs/ARCHITECTURE.md's table of layers
// against the packages' imports (go list): every package is in the table
// or among the test-only packages beside it, and imports only what its
// layer may: packages of the layers above it, of its own layer where the
// table says "each other" (or, for the wire layer, net/wire), and nothing
// of drover's for the data and pure helper layers; the console only
// admin, filter and themes from outside it.
func TestArchitectureLayers(t *testing.T) {
	doc, err := os.ReadFile("docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "## Layers")
	if start < 0 {
		t.Fatal("docs/ARCHITECTURE.md has no ## Layers section")
	}
	section := text[start:]
	if end := strings.Index(section[2:], "\n## "); end >= 0 {
		section = section[:end+2]
	}
	ticked := regexp.MustCompile("`([a-z0-9/]+)`")
	type layer struct {
		name, may string
		pkgs      []string
	}
	var layers []layer
	layerOf := map[string]int{}
	for n, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| layer ") || n == 0 {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 {
			t.Fatalf("layer row %q: want 3 cells", line)
		}
		l := layer{name: strings.TrimSpace(cells[0]), may: cells[2]}
		for _, m := range ticked.FindAllStringSubmatch(cells[1], -1) {
			l.pkgs = append(l.pkgs, m[1])
			layerOf[m[1]] = len(layers)
		}
		layers = append(layers, l)
	}
	if len(layers) < 5 {
		t.Fatalf("%d layers read from the table: want the whole table", len(layers))
	}
	var beside []string
	if i := strings.Index(section, "Beside them"); i >= 0 {
		for _, m := range ticked.FindAllStringSubmatch(section[i:], -1) {
			beside = append(beside, m[1])
		}
	} else {
		t.Fatal("no paragraph of test-only packages (Beside them) after the table")
	}

	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	listed := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], "drover/")
		if f[0] == "drover" {
			pkg = "main"
		}
		li, ok := layerOf[pkg]
		switch {
		case ok:
		case slices.Contains(beside, pkg):
			continue
		default:
			t.Errorf("package %s is in no layer of docs/ARCHITECTURE.md, nor beside them", pkg)
			continue
		}
		listed++
		l := layers[li]
		for _, imp := range f[1:] {
			dep, ours := strings.CutPrefix(imp, "drover/")
			if !ours {
				continue
			}
			lj, ok := layerOf[dep]
			var why string
			switch {
			case !ok:
				why = "a package of no layer"
			case strings.Contains(l.may, "nothing of drover's"):
				why = "anything of drover's"
			case l.name == "console" && lj != li && !slices.Contains([]string{"admin", "filter", "themes"}, dep):
				why = "the " + layers[lj].name + " layer (the console knows the coordinator through tui.Backend)"
			case l.name == "wire" && lj == li && dep != "net/wire":
				why = "another package of its layer"
			case lj > li:
				why = "the lower layer " + layers[lj].name
			case lj == li && !strings.Contains(l.may, "each other") && !strings.Contains(l.may, "everything") && l.name != "wire":
				why = "a package of its own layer"
			}
			if why != "" {
				t.Errorf("%s (layer %s) imports %s: docs/ARCHITECTURE.md says it may not import %s", pkg, l.name, dep, why)
			}
		}
	}
	if listed < 20 {
		t.Errorf("%d packages checked: want every package of the module", listed)
	}
}
