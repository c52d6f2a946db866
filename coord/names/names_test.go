package names

import "testing"

func TestPairsInternAndForget(t *testing.T) {
	var p Pairs
	a := p.Intern("crawl", "page")
	b := p.Intern("crawl", "page")
	c := p.Intern("crawl", "robots")
	if a == 0 || a != b || a == c {
		t.Fatalf("ids %d %d %d: want the same pair to share a non-zero id, another pair another", a, b, c)
	}
	if got := p.Get(c); got != (Pair{"crawl", "robots"}) {
		t.Fatalf("Get(%d) = %+v", c, got)
	}
	if err := p.Check(map[uint32]int{a: 2, c: 1}); err != nil {
		t.Fatal(err)
	}
	p.Release(a)
	if p.Len() != 2 {
		t.Fatalf("%d pairs after one of two references went, want 2", p.Len())
	}
	p.Release(a)
	p.Release(0) // nothing
	if p.Len() != 1 {
		t.Fatalf("%d pairs after the last reference went, want 1", p.Len())
	}
	if d := p.Intern("x", "y"); d != a {
		t.Fatalf("new pair got id %d, want the freed %d reused", d, a)
	}
	if err := p.Check(map[uint32]int{a: 1, c: 1}); err != nil {
		t.Fatal(err)
	}
	if err := p.Check(map[uint32]int{a: 1, c: 2}); err == nil {
		t.Fatal("Check accepted a wrong reference count")
	}
	if p.Get(0) != (Pair{}) {
		t.Fatal("Get(0) is not the zero pair")
	}
}
