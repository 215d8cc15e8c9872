#!/bin/sh
# spawn.sh starts a grandchild and waits for it. It writes its own pid and
# the grandchild's, one a line, to the file $1 (atomically), then waits.
#   $2 = plain:    both die on SIGTERM.
#   $2 = stubborn: both ignore SIGTERM.
#   $2 = orphan:   the child dies on SIGTERM, the grandchild ignores it.
#   $2 = leave:    the child prints {"ok":true} and exits 0 at once,
#                  leaving the grandchild (holding stdout) behind.
case "$2" in
stubborn)
	trap '' TERM
	sleep 60 &
	;;
orphan)
	(trap '' TERM; exec sleep 60) &
	;;
*)
	sleep 60 &
	;;
esac
printf '%s\n%s\n' "$$" "$!" >"$1.tmp"
mv "$1.tmp" "$1"
if [ "$2" = leave ]; then
	echo '{"ok":true}'
	exit 0
fi
wait
