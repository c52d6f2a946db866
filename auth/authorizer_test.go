package auth

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeAtomically(t *testing.T, path, text string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// The keys follow the file: a change (here a replacement by rename, as
// configuration tools make) is put in force and the subscribers told; a
// file that no longer parses leaves the keys in force.
func TestAuthorizerFollowsTheFile(t *testing.T) {
	a1, _ := NewKeyPair()
	a2, _ := NewKeyPair()
	path := filepath.Join(t.TempDir(), "authorized_keys")
	writeAtomically(t, path, "worker "+a1.Public+" one\n")
	az, err := NewAuthorizer(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 10)
	cancel := az.OnChange(func() { changed <- struct{}{} })
	defer cancel()
	ctx, stop := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	go func() { watched <- az.Watch(ctx) }()
	defer func() {
		stop()
		if err := <-watched; err != nil {
			t.Error(err)
		}
	}()

	// The watch may start after the first write: write until it is seen.
	deadline := time.Now().Add(10 * time.Second)
	for {
		writeAtomically(t, path, "viewer "+a2.Public+" two\n")
		select {
		case <-changed:
		case <-time.After(4 * Settle): // longer than Settle, or the writes would keep it waiting
			if time.Now().After(deadline) {
				t.Fatal("the change was not seen within 10s")
			}
			continue
		}
		break
	}
	if _, ok := az.Keys().Lookup(a1.Public); ok {
		t.Fatal("a removed key is still in force")
	}
	if e, ok := az.Keys().Lookup(a2.Public); !ok || e.Role != Viewer {
		t.Fatalf("the new key: %+v %v", e, ok)
	}
	os.WriteFile(path, []byte("admin "+a1.Public+"\n"), 0o600)
	if err := az.Reload(); err == nil || !strings.Contains(err.Error(), path+":1:") {
		t.Fatalf("malformed file: %v, want an error naming %s:1", err, path)
	}
	if _, ok := az.Keys().Lookup(a2.Public); !ok {
		t.Fatal("a malformed file replaced the keys in force")
	}
}

// The example of docs/PROTOCOL.md §15.3 is a valid authorized_keys file.
func TestProtocolExampleParses(t *testing.T) {
	doc, err := os.ReadFile("../docs/PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "### 15.3")
	if !ok {
		t.Fatal("no §15.3 in PROTOCOL.md")
	}
	_, block, ok := strings.Cut(rest, "```\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("no example block in §15.3")
	}
	k, err := ParseAuthorizedKeys("PROTOCOL.md §15.3", []byte(block))
	if err != nil {
		t.Fatal(err)
	}
	if k.Len() != 4 {
		t.Fatalf("%d keys, want one per role", k.Len())
	}
}
