#!/bin/sh
# Stops and disables the service when the package is removed, not when it
# is upgraded. deb passes "remove" or "upgrade"; rpm passes the number of
# versions left after the operation (0 on removal).
set -e
case "$1" in
remove | purge | 0)
	if [ -d /run/systemd/system ]; then
		systemctl disable --now drover >/dev/null 2>&1 || true
	fi
	;;
esac
exit 0
