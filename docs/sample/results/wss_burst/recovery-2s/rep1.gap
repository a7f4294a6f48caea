t	what
1795818282.306915	fio of burst-write-128k rep 1 exiting
1795818282.796992	starting the health snapshot after the burst (it runs beside the idle)
1795818283.360460	checking that writing to /dev/nvme0n1 is still safe
1795818284.860326	the idle left of the planned 2 s
