t	what
1795818296.572813	fio of recovery-2s rep 1 exiting
1795818297.420659	checking that writing to /dev/nvme0n1 is still safe
1795818300.922121	the idle left of the planned 4 s
