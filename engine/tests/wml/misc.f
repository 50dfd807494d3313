# Commands that end or configure a script without running it: multi-client
# sync is parsed and ignored, and `quit` ends the script before `run`.
set $dir=/tmp
enable multi master=localhost, client=c1
domultisync value=1
define file name=f,path=$dir,size=4k,prealloc
define process name=p
{
  thread name=t
  {
    flowop read name=r,filename=f,iosize=4k
  }
}
quit
run 60
