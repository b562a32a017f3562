# bash completion for dfdu, written by hand. `make install` puts it in
# share/bash-completion/completions/dfdu; to try it, `source completions/dfdu.bash`.
# tests/install_kit.rs calls _dfdu for every mode and compares the options it offers with
# what that mode's --help lists, so a new option needs a line here too.

_dfdu_subcommands="scan browse diff dupes dedupe help"

# The options of each mode, short and long, as its --help lists them.
_dfdu_opts_du="-0 --null -a --all --apparent-size -B --block-size -b --bytes -c --total
  -D --dereference-args -d --max-depth --files0-from -H -h --human-readable --inodes
  -j --threads -k -L --dereference -l --count-links -m -P --no-dereference
  -S --separate-dirs --si -s --summarize -t --threshold --time --time-style
  -X --exclude-from --exclude -x --one-file-system --help --version"
_dfdu_opts_scan="-b --bytes -h --human-readable --si -k -m -B --block-size --apparent-size
  -x --one-file-system --exclude -X --exclude-from --exclude-caches --exclude-kernfs
  -L --dereference -j --threads --top --by-exclusive --json --shared --no-shared -o -O
  --treemap --treemap-size -f -q --quiet --ignore-config --help --version"
_dfdu_opts_browse="-x --one-file-system --exclude -X --exclude-from --exclude-caches
  --exclude-kernfs -L --dereference -j --threads -f --apparent-size --si --diff --read-only
  --trash --ascii --no-color --shared --no-shared --ignore-config --help --version"
_dfdu_opts_diff="-b --bytes -h --human-readable --si -k -m -B --block-size --apparent-size
  --top --files --min-change -x --one-file-system --exclude -X --exclude-from
  --exclude-caches --exclude-kernfs -L --dereference -j --threads --json --help --version"
_dfdu_opts_find="-S --size -0 --null --json --min-size --max-size -x --one-file-system
  --exclude -X --exclude-from --exclude-caches --exclude-kernfs -j --threads --hashfile
  --verify -q --quiet --help --version"
_dfdu_opts_dupes="$_dfdu_opts_find --delete --hardlink --symlink --keep --keep-path
  --force-metadata --dry-run --plan --dirs --blocks --block-size"
# dedupe takes every option of dupes but its actions, besides its own.
_dfdu_opts_dedupe="--dry-run --allow-readonly --blocks --block-size $_dfdu_opts_find"

# Options whose value is a file name (or a directory: --diff's OLD may be either), or
# something else (nothing to complete); the rest take no value.
_dfdu_file_value="-X --exclude-from --files0-from -o -O --treemap -f --hashfile --diff --plan
  --keep-path"
_dfdu_other_value="-B --block-size -d --max-depth -t --threshold -j --threads --top
  --min-change --min-size --max-size --exclude --treemap-size"

# Whether word $1 is one of the words in $2.
_dfdu_among() {
    local w
    for w in $2; do
        [[ $w == "$1" ]] && return 0
    done
    return 1
}

_dfdu() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev= cword=$COMP_CWORD attached=
    ((cword > 0)) && prev=${COMP_WORDS[cword - 1]}
    # With '=' among COMP_WORDBREAKS, "--top=5" arrives as "--top" "=" "5".
    if [[ $cur == = ]]; then
        cur= attached=1
    elif [[ $prev == = ]] && ((cword > 1)); then
        prev=${COMP_WORDS[cword - 2]} attached=1
    fi

    local mode=du
    if ((cword > 1)) && _dfdu_among "${COMP_WORDS[1]}" "$_dfdu_subcommands"; then
        mode=${COMP_WORDS[1]}
    fi
    [[ $mode == help ]] && return 0

    COMPREPLY=()
    if [[ $prev == -* ]]; then
        if _dfdu_among "$prev" "$_dfdu_file_value"; then
            compopt -o filenames 2>/dev/null
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
            return 0
        elif [[ $prev == --time && -n $attached ]]; then
            # Its value is optional, so only "--time=WORD" gives one.
            mapfile -t COMPREPLY < <(compgen -W "atime access use ctime status" -- "$cur")
            return 0
        elif [[ $prev == --keep ]]; then
            # A comma-separated list of rules: complete the last one.
            local done=
            [[ $cur == *,* ]] && done=${cur%,*},
            local rules="oldest newest shortest longest first-arg"
            mapfile -t COMPREPLY < <(compgen -P "$done" -W "$rules" -- "${cur##*,}")
            return 0
        elif [[ $prev == --time-style ]]; then
            mapfile -t COMPREPLY < <(compgen -W "full-iso long-iso iso" -- "$cur")
            return 0
        elif _dfdu_among "$prev" "$_dfdu_other_value"; then
            return 0
        fi
    fi

    local opts_var=_dfdu_opts_$mode
    if [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "${!opts_var}" -- "$cur")
        return 0
    fi
    compopt -o filenames 2>/dev/null
    case $mode in
        scan | browse) mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
        *) mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
    esac
    if ((cword == 1)); then
        local subs
        mapfile -t subs < <(compgen -W "$_dfdu_subcommands" -- "$cur")
        COMPREPLY=("${subs[@]}" "${COMPREPLY[@]}")
    fi
    return 0
}

complete -F _dfdu dfdu
