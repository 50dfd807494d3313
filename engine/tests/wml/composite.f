# Composite flowops with iters and local variables.
set $dir=/tmp
define fileset name=fs,path=$dir,size=8k,entries=50,dirwidth=10,prealloc=80
define flowop name=rmw, iters=2, $io=4k
{
  flowop openfile name=open1,filesetname=fs,fd=1
  flowop read name=rd,fd=1,iosize=$io
  flowop write name=wr,fd=1,iosize=$io
  flowop closefile name=close1,fd=1
}
define process name=p
{
  thread name=t
  {
    flowop rmw name=rmw1, iters=3, $io=2k
    flowop statfile name=st,filesetname=fs,iters=2
  }
}
run 60
