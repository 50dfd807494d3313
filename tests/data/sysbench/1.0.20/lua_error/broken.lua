-- a user's script whose event calls a function that does not exist
require("oltp_common")

function prepare_statements()
end

function event()
   local n = sysbench.rand.uniform(1, sysbench.opt.table_size)
   con:query("SELECT c FROM sbtest1 WHERE id=" .. n)
   no_such_function(n)
end
