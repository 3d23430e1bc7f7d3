import Foundation
import ReconcileCLI

exit(Reconcilectl.main(arguments: Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))
