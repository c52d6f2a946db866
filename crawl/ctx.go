package crawl

import "context"

// valueCtx is context.WithValue's context, for the values a fetch carries
// (WithSeed, withGuard), that also passes AfterFunc on to its parent. A
// fetch derives a context with a timeout from it (and net/http more); the
// context package links such a child to a parent that is neither one of
// its own cancel contexts nor has an AfterFunc method by starting a
// goroutine that waits for either to end: one per page when the parent is
// a worker's job context (net/worker's has AfterFunc, but a plain value
// context over it hides it).
type valueCtx struct {
	context.Context
	key, val any
}

// withValue is context.WithValue, as a valueCtx.
func withValue(parent context.Context, key, val any) context.Context {
	return &valueCtx{Context: parent, key: key, val: val}
}

func (c *valueCtx) Value(key any) any {
	if key == c.key {
		return c.val
	}
	return c.Context.Value(key)
}

// afterFuncer is the method the context package looks for on a parent.
type afterFuncer interface {
	AfterFunc(func()) func() bool
}

// AfterFunc calls f once c is done, which is when its parent is: it
// registers with the parent's AfterFunc, or else with context.AfterFunc
// (for a standard parent, one of its children; the goroutine otherwise).
func (c *valueCtx) AfterFunc(f func()) (stop func() bool) {
	if a, ok := c.Context.(afterFuncer); ok {
		return a.AfterFunc(f)
	}
	return context.AfterFunc(c.Context, f)
}
