# finishonbytes stops each thread; alldone ends the run when all are done.
set $dir=/tmp
define file name=log,path=$dir,size=0,prealloc
define process name=p,instances=2
{
  thread name=t
  {
    flowop appendfile name=app,filename=log,iosize=4k
    flowop finishonbytes name=finb,target=app,value=400k
  }
}
set mode quit alldone
run 30
