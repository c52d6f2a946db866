#!/bin/sh
# Writes drover's shell completions (bash, zsh, fish) for the release
# archives and packages, by building drover for this host and running its
# "completion" command. goreleaser runs it as a before hook.
# Usage: packaging/completions.sh [OUTDIR]   (default bin/completions)
set -eu
out=${1:-bin/completions}
mkdir -p "$out"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/drover" .
for sh in bash zsh fish; do
	"$bin/drover" completion "$sh" >"$out/drover.$sh"
done
