package stamp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Sources are the files, relative to package abi, whose content decides the
// generated output (tests excluded).
var Sources = []string{"internal/gen/*.go", "internal/gen/*.go.in", "internal/names/*.go", "internal/stamp/*.go"}

// Header line prefixes.
const (
	SourcesPrefix = "// Sources-SHA256: "
	BodyPrefix    = "// Body-SHA256: "
)

// SourcesHash hashes the files matched by Sources under dir, in sorted order:
// slash path, NUL, content, NUL.
func SourcesHash(dir string) (string, error) {
	var files []string
	for _, pat := range Sources {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return "", err
		}
		for _, f := range m {
			if !strings.HasSuffix(f, "_test.go") {
				files = append(files, f)
			}
		}
	}
	if len(files) == 0 {
		return "", fmt.Errorf("no generator sources under %s", dir)
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		rel, err := filepath.Rel(dir, f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%s\x00", filepath.ToSlash(rel), b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Hash returns the hex SHA-256 of b.
func Hash(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Stamp is what a generated file's header records.
type Stamp struct {
	Sources string // SourcesHash at generation time
	Body    string // Hash of the file after the Body line
	BodyNow string // Hash of the file after the Body line, as read
}

// Read parses the header of a generated file.
func Read(file []byte) (Stamp, error) {
	var s Stamp
	rest := file
	for len(rest) > 0 {
		line, after, _ := bytes.Cut(rest, []byte("\n"))
		rest = after
		l := string(line)
		switch {
		case strings.HasPrefix(l, SourcesPrefix):
			s.Sources = strings.TrimPrefix(l, SourcesPrefix)
		case strings.HasPrefix(l, BodyPrefix):
			s.Body = strings.TrimPrefix(l, BodyPrefix)
			s.BodyNow = Hash(rest)
			if s.Sources == "" {
				return s, errors.New("header has no " + strings.TrimSpace(SourcesPrefix) + " line before the body hash")
			}
			return s, nil
		case !strings.HasPrefix(l, "//"):
			return s, errors.New("header has no " + strings.TrimSpace(BodyPrefix) + " line")
		}
	}
	return s, errors.New("empty file")
}
