# Think time, printing, random-variable sampling and the rate limiters fed
# by the event generator.
set $dir=/tmp
set $rate=200
define file name=f,path=$dir,size=64k,prealloc
define process name=p
{
  thread name=limited,memsize=64k
  {
    flowop read name=r1,filename=f,iosize=4k
    flowop eventlimit name=el
    flowop opslimit name=ol
    flowop iopslimit name=il,target=r1
    flowop bwlimit name=bl
    flowop hog name=hg,value=100
    flowop testrandvar name=trv,value=$rate
    flowop print name=pr,value="hello"
  }
  thread name=sleeper
  {
    flowop delay name=dly,value=1
  }
}
eventgen rate=$rate
run 60
