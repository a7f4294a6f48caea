t	what
1795809153.546543	fio of recovery-2s rep 1 exiting
1795809154.366113	checking that writing to /dev/nvme0n1 is still safe
1795809157.728441	the idle left of the planned 4 s
