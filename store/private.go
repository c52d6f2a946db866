package store

import (
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The store holds every URL and payload the coordinator was given: only
// its owner may read it. Its directory is created with mode 0700 (and an
// existing one open to others is narrowed to it), and every file in it is
// mode 0600, whatever the umask.

// dirMode and fileMode are the modes of the store's directory and files.
const (
	dirMode  fs.FileMode = 0o700
	fileMode fs.FileMode = 0o600
)

// privateFS is the operating system's file system with every file the
// store creates made mode 0600 (Pebble creates them 0666 less the umask).
type privateFS struct{ vfs.FS }

func (p privateFS) private(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	if cerr := os.Chmod(name, fileMode); cerr != nil {
		f.Close()
		return nil, cerr
	}
	return f, nil
}

// Create creates name with mode 0600.
func (p privateFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.Create(name, c)
	return p.private(name, f, err)
}

// OpenReadWrite opens (or creates) name, mode 0600.
func (p privateFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := p.FS.OpenReadWrite(name, c, opts...)
	return p.private(name, f, err)
}

// ReuseForWrite renames oldname to newname for writing, mode 0600.
func (p privateFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.ReuseForWrite(oldname, newname, c)
	return p.private(newname, f, err)
}

// narrowDir makes an existing store directory open to others mode 0700.
func narrowDir(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	return os.Chmod(path, fi.Mode().Perm()&^0o077)
}

// Lock takes the lock file name, made mode 0600.
func (p privateFS) Lock(name string) (io.Closer, error) {
	c, err := p.FS.Lock(name)
	if err != nil {
		return c, err
	}
	if cerr := os.Chmod(name, fileMode); cerr != nil {
		c.Close()
		return nil, cerr
	}
	return c, nil
}
