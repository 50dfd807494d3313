# finishoncount with a target ends the run in firstdone mode.
set $dir=/tmp
define file name=log,path=$dir,size=0,prealloc
define process name=p
{
  thread name=t
  {
    flowop appendfile name=app,filename=log,iosize=1k
    flowop finishoncount name=fin,target=app,value=500
  }
}
set mode quit firstdone
run 30
