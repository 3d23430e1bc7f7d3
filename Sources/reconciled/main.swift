import Foundation
import ReconcileDaemon

let status = await DaemonMain.run(
    arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
exit(status)
