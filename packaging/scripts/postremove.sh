#!/bin/sh
# Lets systemd forget the removed unit. The drover account and the state in
# /var/lib/drover are kept (remove them by hand if the data is not wanted).
set -e
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
