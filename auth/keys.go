// Package auth is drover's client authentication and authorisation over
// ZeroMQ CURVE (RFC 26/CurveZMQ), after the ZeroMQ guide's Ironhouse
// pattern: key pairs and their files (drover keygen), the authorized_keys
// file that lists the clients a coordinator admits with a role each, the
// rights of each role, and an Authorizer that keeps the list current
// (re-read on SIGHUP and when the file changes).
//
// The ZAP handler that applies the list at each handshake lives in
// net/zsock (it owns a ZeroMQ socket); the per-command checks live in
// net/server. Docs: docs/PROTOCOL.md §15.
//
// # Key files
//
// A key file is UTF-8 text: lines that are empty or start with '#' are
// comments, and exactly one other line holds the key, 40 characters of Z85
// (ZeroMQ's RFC 32 encoding of the 32-byte Curve25519 key). PREFIX.key holds
// the secret key (mode 0600; a file others may read is refused, as ssh
// refuses one), PREFIX.pub the public key; drover keygen writes a comment
// line in each (the .key one names its public key). A secret key may also
// be given inline (the 40 Z85 characters themselves), for containers that
// take secrets from the environment.
package auth

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pebbe/zmq4"
)

// KeyLen is the length of a key in Z85: 40 characters for 32 bytes.
const KeyLen = 40

const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

// KeyPair is a CURVE key pair in Z85.
type KeyPair struct {
	Public string
	Secret string
}

// String never shows the secret key (a KeyPair may end up in a log line).
func (k KeyPair) String() string { return "curve key " + k.Public }

// CheckKey reports whether k is a well-formed Z85 key of 40 characters.
func CheckKey(k string) error {
	if len(k) != KeyLen {
		return fmt.Errorf("%d characters, want %d of Z85", len(k), KeyLen)
	}
	for i := range len(k) {
		if !strings.ContainsRune(z85Alphabet, rune(k[i])) {
			return fmt.Errorf("character %d is %q, want Z85 (letters, digits and .-:+=^!/*?&<>()[]{}@%%$#)", i+1, k[i])
		}
	}
	return nil
}

// NewKeyPair makes a fresh CURVE key pair.
func NewKeyPair() (KeyPair, error) {
	if !zmq4.HasCurve() {
		return KeyPair{}, errors.New("new key pair: this libzmq was built without CURVE")
	}
	pub, sec, err := zmq4.NewCurveKeypair()
	if err != nil {
		return KeyPair{}, fmt.Errorf("new key pair: %w", err)
	}
	return KeyPair{Public: pub, Secret: sec}, nil
}

// PairOf derives the key pair of a secret key.
func PairOf(secret string) (KeyPair, error) {
	if err := CheckKey(secret); err != nil {
		return KeyPair{}, fmt.Errorf("secret key: %w", err)
	}
	pub, err := zmq4.AuthCurvePublic(secret)
	if err != nil {
		return KeyPair{}, fmt.Errorf("deriving the public key: %w", err)
	}
	return KeyPair{Public: pub, Secret: secret}, nil
}

// WriteKeyPair makes a key pair and writes prefix.key (the secret, mode
// 0600) and prefix.pub (the public key). It refuses to overwrite either
// unless force is set. A missing parent directory is created with mode
// 0700.
func WriteKeyPair(prefix string, force bool) (KeyPair, error) {
	if prefix == "" {
		return KeyPair{}, errors.New("empty prefix: want a path such as /etc/drover/server (writes server.key and server.pub)")
	}
	secPath, pubPath := prefix+".key", prefix+".pub"
	if !force {
		for _, p := range []string{secPath, pubPath} {
			if _, err := os.Lstat(p); err == nil {
				return KeyPair{}, fmt.Errorf("%s exists: refusing to overwrite a key (--force replaces it)", p)
			}
		}
	}
	if err := os.MkdirAll(filepath.Dir(prefix), 0o700); err != nil {
		return KeyPair{}, fmt.Errorf("creating the key directory: %w", err)
	}
	kp, err := NewKeyPair()
	if err != nil {
		return KeyPair{}, err
	}
	now := time.Now().UTC().Format(time.RFC3339)
	name := filepath.Base(prefix)
	sec := fmt.Sprintf("# drover CURVE secret key %q, made %s. Keep it private (mode 0600).\n# Its public key: %s\n%s\n", name, now, kp.Public, kp.Secret)
	pub := fmt.Sprintf("# drover CURVE public key %q, made %s\n%s\n", name, now, kp.Public)
	if err := writeFile(secPath, []byte(sec), 0o600); err != nil {
		return KeyPair{}, err
	}
	if err := writeFile(pubPath, []byte(pub), 0o644); err != nil {
		return KeyPair{}, err
	}
	return kp, nil
}

// writeFile writes data to path with mode perm through a temporary file in
// the same directory, renamed over path: a reader never sees half a key,
// and a secret is never readable by others, not even for a moment.
func writeFile(path string, data []byte, perm fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	ok = true
	return nil
}

// parseKeyText finds the one key line of a key file's text.
func parseKeyText(name string, data []byte) (string, error) {
	key, line := "", 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if key != "" {
			return "", fmt.Errorf("%s:%d: a second key (the first is on line %d), want exactly one", name, n, line)
		}
		if err := CheckKey(t); err != nil {
			return "", fmt.Errorf("%s:%d: %w", name, n, err)
		}
		key, line = t, n
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if key == "" {
		return "", fmt.Errorf("%s: no key, want one line of %d Z85 characters", name, KeyLen)
	}
	return key, nil
}

// LoadSecret reads a secret key: spec is the key itself (40 Z85
// characters) or the path of a key file, which must not be readable by
// group or others. It returns the pair (the public key derived).
func LoadSecret(spec string) (KeyPair, error) {
	if spec == "" {
		return KeyPair{}, errors.New("empty secret key: want a key file or 40 Z85 characters")
	}
	if CheckKey(spec) == nil {
		if _, err := os.Stat(spec); err != nil { // a file of that very name wins
			return PairOf(spec)
		}
	}
	fi, err := os.Stat(spec)
	if err != nil {
		return KeyPair{}, fmt.Errorf("secret key file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return KeyPair{}, fmt.Errorf("secret key file %s has mode %04o: others may read it; run chmod 600 %s", spec, fi.Mode().Perm(), spec)
	}
	data, err := os.ReadFile(spec)
	if err != nil {
		return KeyPair{}, fmt.Errorf("secret key file: %w", err)
	}
	k, err := parseKeyText(spec, data)
	if err != nil {
		return KeyPair{}, err
	}
	kp, err := PairOf(k)
	if err != nil {
		return KeyPair{}, fmt.Errorf("%s: %w", spec, err)
	}
	return kp, nil
}

// LoadPublic reads a public key: spec is the key itself (40 Z85
// characters) or the path of a key file (PREFIX.pub).
func LoadPublic(spec string) (string, error) {
	if spec == "" {
		return "", errors.New("empty public key: want a .pub file or 40 Z85 characters")
	}
	if CheckKey(spec) == nil {
		if _, err := os.Stat(spec); err != nil {
			return spec, nil
		}
	}
	data, err := os.ReadFile(spec)
	if err != nil {
		return "", fmt.Errorf("public key: %w", err)
	}
	return parseKeyText(spec, data)
}
