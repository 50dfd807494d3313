# O_DIRECT reads and writes with an aligned buffer.
set $dir=/tmp
define file name=dio,path=$dir,size=1m,prealloc
define process name=p
{
  thread name=t,memsize=256k
  {
    flowop read name=dread,filename=dio,iosize=4k,random,directio
    flowop write name=dwrite,filename=dio,iosize=4k,random,directio,fd=2
  }
}
run 60
