#!/bin/sh
# Creates the system account the drover service runs as, if missing.
# Runs before the files are unpacked (deb preinst, rpm %pre).
set -e
if ! getent group drover >/dev/null 2>&1; then
	groupadd --system drover
fi
if ! getent passwd drover >/dev/null 2>&1; then
	nologin=/usr/sbin/nologin
	[ -x "$nologin" ] || nologin=/sbin/nologin
	useradd --system --gid drover --home-dir /var/lib/drover --no-create-home \
		--shell "$nologin" --comment "drover coordinator" drover
fi
exit 0
