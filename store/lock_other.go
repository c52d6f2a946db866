//go:build !unix

package store

// lockHolder cannot name the holder of a lock on this platform.
func lockHolder(string) string { return "" }
