# fish completion for dfdu, written by hand. `make install` puts it in
# share/fish/vendor_completions.d/dfdu.fish; to try it, `source completions/dfdu.fish`.
# tests/install_kit.rs asks fish (`complete -C`) for every mode's options and compares
# them with what that mode's --help lists, so a new option needs a line here too.

# The mode of the command line: a subcommand given as the first argument, else du.
function __dfdu_mode
    set -l words (commandline -opc)
    if test (count $words) -ge 2; and contains -- $words[2] scan browse diff dupes dedupe help
        echo $words[2]
    else
        echo du
    end
end

# Whether the mode is one of the arguments.
function __dfdu_in
    contains -- (__dfdu_mode) $argv
end

function __dfdu_first
    test (count (commandline -opc)) -eq 1
end

complete -c dfdu -e
complete -c dfdu -n __dfdu_first -a scan -d 'totals, counts, largest entries; ncdu export and import'
complete -c dfdu -n __dfdu_first -a browse -d 'browse, sort and delete, during and after the scan'
complete -c dfdu -n __dfdu_first -a diff -d 'what grew and shrank between two exports or directories'
complete -c dfdu -n __dfdu_first -a dupes -d 'files with identical content'
complete -c dfdu -n __dfdu_first -a dedupe -d 'make duplicates share their extents (btrfs, XFS)'
complete -c dfdu -n __dfdu_first -a help -d 'an overview of the modes'
# Nothing follows `dfdu help`; scan and browse take directories.
complete -c dfdu -n '__dfdu_in help' -f
complete -c dfdu -n '__dfdu_in scan browse' -f -a '(__fish_complete_directories)'

# du mode (GNU du's options)
complete -c dfdu -n '__dfdu_in du' -s 0 -l null -d 'end output lines with NUL'
complete -c dfdu -n '__dfdu_in du' -s a -l all -d 'list files as well as directories'
complete -c dfdu -n '__dfdu_in du' -l apparent-size -d 'count apparent sizes'
complete -c dfdu -n '__dfdu_in du' -s B -l block-size -x -d 'units of SIZE bytes'
complete -c dfdu -n '__dfdu_in du' -s b -l bytes -d 'apparent sizes in bytes'
complete -c dfdu -n '__dfdu_in du' -s c -l total -d 'add a grand total'
complete -c dfdu -n '__dfdu_in du' -s D -l dereference-args -d 'follow symlinks given as arguments'
complete -c dfdu -n '__dfdu_in du' -s H -d 'follow symlinks given as arguments'
complete -c dfdu -n '__dfdu_in du' -s d -l max-depth -x -d 'totals at most N levels down'
complete -c dfdu -n '__dfdu_in du' -l files0-from -r -F -d 'take NUL-ended names from F'
complete -c dfdu -n '__dfdu_in du' -s h -l human-readable -d 'sizes with unit letters'
complete -c dfdu -n '__dfdu_in du' -l inodes -d 'count inodes instead of space'
complete -c dfdu -n '__dfdu_in du' -s j -l threads -x -d 'scan with N threads'
complete -c dfdu -n '__dfdu_in du' -s k -d 'units of 1K'
complete -c dfdu -n '__dfdu_in du' -s L -l dereference -d 'follow every symlink'
complete -c dfdu -n '__dfdu_in du' -s l -l count-links -d 'count hard links once per name'
complete -c dfdu -n '__dfdu_in du' -s m -d 'units of 1M'
complete -c dfdu -n '__dfdu_in du' -s P -l no-dereference -d 'never follow symlinks'
complete -c dfdu -n '__dfdu_in du' -s S -l separate-dirs -d 'leave subdirectories out'
complete -c dfdu -n '__dfdu_in du' -l si -d 'like -h, powers of 1000'
complete -c dfdu -n '__dfdu_in du' -s s -l summarize -d 'one total per argument'
complete -c dfdu -n '__dfdu_in du' -s t -l threshold -x -d 'leave out entries below SIZE'
complete -c dfdu -n '__dfdu_in du' -l time -f -a 'atime access use ctime status' -d 'newest time in each directory'
complete -c dfdu -n '__dfdu_in du' -l time-style -x -a 'full-iso long-iso iso' -d 'format of --time'
complete -c dfdu -n '__dfdu_in du' -s X -l exclude-from -r -F -d 'skip patterns in FILE'
complete -c dfdu -n '__dfdu_in du' -l exclude -x -d 'skip entries matching PATTERN'
complete -c dfdu -n '__dfdu_in du' -s x -l one-file-system -d 'stay on one file system'
complete -c dfdu -n '__dfdu_in du' -l help -d 'show the help'
complete -c dfdu -n '__dfdu_in du' -l version -d 'show the version'

# dfdu scan
complete -c dfdu -n '__dfdu_in scan' -s b -l bytes -d 'exact byte counts'
complete -c dfdu -n '__dfdu_in scan' -s h -l human-readable -d 'units of 1024'
complete -c dfdu -n '__dfdu_in scan' -l si -d 'units of 1000'
complete -c dfdu -n '__dfdu_in scan' -l apparent-size -d 'rank and total by apparent size'
complete -c dfdu -n '__dfdu_in scan' -s k -d 'units of 1K'
complete -c dfdu -n '__dfdu_in scan' -s m -d 'units of 1M'
complete -c dfdu -n '__dfdu_in scan' -s B -l block-size -x -d 'units of SIZE bytes'
complete -c dfdu -n '__dfdu_in scan' -s x -l one-file-system -d 'do not enter other file systems'
complete -c dfdu -n '__dfdu_in scan' -l exclude -x -d 'skip entries matching PATTERN'
complete -c dfdu -n '__dfdu_in scan' -s X -l exclude-from -r -F -d 'skip patterns in FILE'
complete -c dfdu -n '__dfdu_in scan' -l exclude-caches -d 'skip directories holding a valid CACHEDIR.TAG'
complete -c dfdu -n '__dfdu_in scan' -l exclude-kernfs -d 'skip mounts of kernel file systems'
complete -c dfdu -n '__dfdu_in scan' -s L -l dereference -d 'follow symlinks'
complete -c dfdu -n '__dfdu_in scan' -s j -l threads -x -d 'scan with N threads'
complete -c dfdu -n '__dfdu_in scan' -l top -x -d 'the N largest directories and files'
complete -c dfdu -n '__dfdu_in scan' -l by-exclusive -d 'rank by exclusive bytes'
complete -c dfdu -n '__dfdu_in scan' -l json -d 'the report as JSON'
complete -c dfdu -n '__dfdu_in scan' -l shared -d 'read extent maps: shared figures'
complete -c dfdu -n '__dfdu_in scan' -l no-shared -d 'do not read extent maps'
complete -c dfdu -n '__dfdu_in scan' -s o -r -F -d 'also write an ncdu export to FILE'
complete -c dfdu -n '__dfdu_in scan' -s O -r -F -d 'the same in ncdu 2.6 binary format'
complete -c dfdu -n '__dfdu_in scan' -l treemap -r -F -d 'also draw an SVG treemap in FILE'
complete -c dfdu -n '__dfdu_in scan' -l treemap-size -x -d 'the treemap proportions, WxH'
complete -c dfdu -n '__dfdu_in scan' -s f -r -F -d 'report on an export'
complete -c dfdu -n '__dfdu_in scan' -s q -l quiet -d 'no progress line'
complete -c dfdu -n '__dfdu_in scan' -l help -d 'show the help'
complete -c dfdu -n '__dfdu_in scan' -l version -d 'show the version'
complete -c dfdu -n '__dfdu_in scan' -l ignore-config -d 'do not read the config files'

# dfdu browse
complete -c dfdu -n '__dfdu_in browse' -s x -l one-file-system -d 'do not enter other file systems'
complete -c dfdu -n '__dfdu_in browse' -l exclude -x -d 'skip entries matching PATTERN'
complete -c dfdu -n '__dfdu_in browse' -s X -l exclude-from -r -F -d 'skip patterns in FILE'
complete -c dfdu -n '__dfdu_in browse' -l exclude-caches -d 'skip directories holding a valid CACHEDIR.TAG'
complete -c dfdu -n '__dfdu_in browse' -l exclude-kernfs -d 'skip mounts of kernel file systems'
complete -c dfdu -n '__dfdu_in browse' -s L -l dereference -d 'follow symlinks'
complete -c dfdu -n '__dfdu_in browse' -s j -l threads -x -d 'scan with N threads'
complete -c dfdu -n '__dfdu_in browse' -s f -r -F -d 'browse an export'
complete -c dfdu -n '__dfdu_in browse' -l apparent-size -d 'start with apparent sizes'
complete -c dfdu -n '__dfdu_in browse' -l si -d 'units of 1000'
complete -c dfdu -n '__dfdu_in browse' -l diff -r -F -d 'compare with OLD (export or directory)'
complete -c dfdu -n '__dfdu_in browse' -l read-only -d 'no deleting'
complete -c dfdu -n '__dfdu_in browse' -l trash -d 'd moves to the trash'
complete -c dfdu -n '__dfdu_in browse' -l ignore-config -d 'do not read the config files'
complete -c dfdu -n '__dfdu_in browse' -l ascii -d 'plain ASCII only'
complete -c dfdu -n '__dfdu_in browse' -l no-color -d 'no colours'
complete -c dfdu -n '__dfdu_in browse' -l shared -d 'exclusive-bytes column'
complete -c dfdu -n '__dfdu_in browse' -l no-shared -d 'do not read extent maps'
complete -c dfdu -n '__dfdu_in browse' -l help -d 'show the help'
complete -c dfdu -n '__dfdu_in browse' -l version -d 'show the version'

# dfdu diff
complete -c dfdu -n '__dfdu_in diff' -s b -l bytes -d 'exact byte counts'
complete -c dfdu -n '__dfdu_in diff' -s h -l human-readable -d 'units of 1024'
complete -c dfdu -n '__dfdu_in diff' -l si -d 'units of 1000'
complete -c dfdu -n '__dfdu_in diff' -l apparent-size -d 'compare apparent sizes'
complete -c dfdu -n '__dfdu_in diff' -s k -d 'units of 1K'
complete -c dfdu -n '__dfdu_in diff' -s m -d 'units of 1M'
complete -c dfdu -n '__dfdu_in diff' -s B -l block-size -x -d 'units of SIZE bytes'
complete -c dfdu -n '__dfdu_in diff' -l top -x -d 'at most N of each list'
complete -c dfdu -n '__dfdu_in diff' -l files -d 'also the files that changed most'
complete -c dfdu -n '__dfdu_in diff' -l min-change -x -d 'leave out changes below SIZE'
complete -c dfdu -n '__dfdu_in diff' -s x -l one-file-system -d 'do not enter other file systems'
complete -c dfdu -n '__dfdu_in diff' -l exclude -x -d 'skip entries matching PATTERN'
complete -c dfdu -n '__dfdu_in diff' -s X -l exclude-from -r -F -d 'skip patterns in FILE'
complete -c dfdu -n '__dfdu_in diff' -l exclude-caches -d 'skip directories holding a valid CACHEDIR.TAG'
complete -c dfdu -n '__dfdu_in diff' -l exclude-kernfs -d 'skip mounts of kernel file systems'
complete -c dfdu -n '__dfdu_in diff' -s L -l dereference -d 'follow symlinks'
complete -c dfdu -n '__dfdu_in diff' -s j -l threads -x -d 'scan with N threads'
complete -c dfdu -n '__dfdu_in diff' -l json -d 'the report as JSON'
complete -c dfdu -n '__dfdu_in diff' -l help -d 'show the help'
complete -c dfdu -n '__dfdu_in diff' -l version -d 'show the version'

# dfdu dupes, and dedupe, which takes every option of dupes
complete -c dfdu -n '__dfdu_in dupes dedupe' -s S -l size -d 'print N bytes each: before each group'
complete -c dfdu -n '__dfdu_in dupes dedupe' -s 0 -l null -d 'NUL after each path and group'
complete -c dfdu -n '__dfdu_in dupes dedupe' -l json -d 'a JSON document'
complete -c dfdu -n '__dfdu_in dupes dedupe' -l min-size -x -d 'ignore files smaller than N bytes'
complete -c dfdu -n '__dfdu_in dupes dedupe' -l max-size -x -d 'ignore files larger than N bytes'
complete -c dfdu -n '__dfdu_in dupes dedupe' -s x -l one-file-system -d 'do not enter other file systems'
complete -c dfdu -n '__dfdu_in dupes dedupe' -l exclude -x -d 'skip entries matching PATTERN'
complete -c dfdu -n '__dfdu_in dupes dedupe' -s X -l exclude-from -r -F -d 'skip patterns in FILE'
complete -c dfdu -n '__dfdu_in dupes dedupe' -l exclude-caches -d 'skip directories holding a valid CACHEDIR.TAG'
complete -c dfdu -n '__dfdu_in dupes dedupe' -l exclude-kernfs -d 'skip mounts of kernel file systems'
complete -c dfdu -n '__dfdu_in dupes dedupe' -s j -l threads -x -d 'scan and read with N threads'
complete -c dfdu -n '__dfdu_in dupes dedupe' -l hashfile -r -F -d 'remember what was read in FILE'
complete -c dfdu -n '__dfdu_in dupes dedupe' -l verify -d 'read vouched-for groups again'
complete -c dfdu -n '__dfdu_in dupes dedupe' -s q -l quiet -d 'no progress line and no summary'
complete -c dfdu -n '__dfdu_in dupes dedupe' -l help -d 'show the help'
complete -c dfdu -n '__dfdu_in dupes dedupe' -l version -d 'show the version'
complete -c dfdu -n '__dfdu_in dupes' -l delete -d 'remove all but the kept file of each group'
complete -c dfdu -n '__dfdu_in dupes' -l hardlink -d 'replace the others by hard links'
complete -c dfdu -n '__dfdu_in dupes' -l symlink -d 'replace the others by symbolic links'
complete -c dfdu -n '__dfdu_in dupes' -l keep -x -a 'oldest newest shortest longest first-arg' -d 'which file is kept'
complete -c dfdu -n '__dfdu_in dupes' -l keep-path -r -F -d 'prefer files in DIR'
complete -c dfdu -n '__dfdu_in dupes' -l force-metadata -d 'hard-link despite another owner or mode'
complete -c dfdu -n '__dfdu_in dupes' -l dry-run -d 'check and print, change nothing'
complete -c dfdu -n '__dfdu_in dupes' -l plan -r -F -d 'write the actions as a shell script'
complete -c dfdu -n '__dfdu_in dupes' -l dirs -d 'directories with identical trees'
complete -c dfdu -n '__dfdu_in dedupe' -l dry-run -d 'say what would be submitted'
complete -c dfdu -n '__dfdu_in dedupe' -l allow-readonly -d 'change read-only snapshots too'
complete -c dfdu -n '__dfdu_in dedupe' -l blocks -d 'also share equal blocks of files that differ'
complete -c dfdu -n '__dfdu_in dupes' -l blocks -d 'also list equal ranges of files that differ'
complete -c dfdu -n '__dfdu_in dupes dedupe' -l block-size -x -d 'blocks of N bytes'
