# finishoncount without a target counts every flowop of the process
# (controlstats); in the default timeout mode it ends the run cleanly.
set $dir=/tmp
define fileset name=fs,path=$dir,size=0,entries=1,dirwidth=10,prealloc=100
define process name=p
{
  thread name=t
  {
    flowop openfile name=open1,filesetname=fs,fd=1
    flowop appendfile name=app,iosize=1k,fd=1,iters=100
    flowop closefile name=close1,fd=1
    flowop finishoncount name=finish,value=1
  }
}
run 30
