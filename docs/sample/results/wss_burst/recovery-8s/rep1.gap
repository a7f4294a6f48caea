t	what
1795809169.003692	fio of recovery-4s rep 1 exiting
1795809169.544742	checking that writing to /dev/nvme0n1 is still safe
1795809177.176956	the idle left of the planned 8 s
