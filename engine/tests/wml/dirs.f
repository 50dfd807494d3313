# Leaf directories: makedir / removedir / listdir, with an explicit depth
# randvar and fixed widths.
set $dir=/tmp
set $depth=randvar(type=uniform, min=1, mean=2)
define fileset name=tree,path=$dir,size=0,entries=0,leafdirs=40,dirwidth=4,dirgamma=0,dirdepthrv=$depth,prealloc=50
define process name=p
{
  thread name=t
  {
    flowop makedir name=mk,filesetname=tree
    flowop listdir name=ls,filesetname=tree
    flowop removedir name=rm,filesetname=tree
  }
}
run 60
