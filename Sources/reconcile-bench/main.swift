import Foundation

// reconcile-bench: performance scenarios, each printing a table and one JSON line.
//
//   swift run -c release reconcile-bench [scenario] [--quick] [--dir PATH]
exit(await BenchmarkMain.run(Array(CommandLine.arguments.dropFirst())))
