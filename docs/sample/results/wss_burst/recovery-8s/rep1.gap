t	what
1795818312.846160	fio of recovery-4s rep 1 exiting
1795818313.545997	checking that writing to /dev/nvme0n1 is still safe
1795818321.276857	the idle left of the planned 8 s
